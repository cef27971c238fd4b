"""Moved to :mod:`airflow_provider_deltacc.deployment.config`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.deployment.config import (
    ALLOW_UNSHARED_ENV,
    ALLOW_UNSHARED_LEASE_STORE,
    ALLOW_UNSHARED_OPTION,
    DEFAULT_DEFERRABLE,
    DEFAULT_LEASE_HISTORY_DAYS,
    LEASE_HISTORY_DAYS,
    LEASE_STORE_CONN_ID,
    LEASE_STORE_CONN_ID_OPTION,
    REPORT_DIR,
    SECTION,
    configured_lease_history,
    configured_lease_store_conn_id,
    configured_report_dir,
    default_deferrable,
    provider_config,
    unshared_lease_store_allowed,
)

__all__ = [
    "ALLOW_UNSHARED_ENV",
    "ALLOW_UNSHARED_LEASE_STORE",
    "ALLOW_UNSHARED_OPTION",
    "DEFAULT_DEFERRABLE",
    "DEFAULT_LEASE_HISTORY_DAYS",
    "LEASE_HISTORY_DAYS",
    "LEASE_STORE_CONN_ID",
    "LEASE_STORE_CONN_ID_OPTION",
    "REPORT_DIR",
    "SECTION",
    "configured_lease_history",
    "configured_lease_store_conn_id",
    "configured_report_dir",
    "default_deferrable",
    "provider_config",
    "unshared_lease_store_allowed",
]

warnings.warn(
    "airflow_provider_deltacc.config is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.deployment.config",
    DeprecationWarning,
    stacklevel=2,
)
