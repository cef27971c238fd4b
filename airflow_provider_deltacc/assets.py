"""Moved to :mod:`airflow_provider_deltacc.lineage.assets`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.lineage.assets import (
    ASSET_GROUP,
    CATALOG_SCHEME,
    DEFAULT_CATALOG,
    DEFAULT_SCHEMA,
    check_outlets,
    declare_table_outlet,
    emits_event,
    event_extra,
    is_template,
    mapped_outlets,
    record_table_event,
    table_alias,
    table_asset,
    table_asset_uri,
    table_outlet,
    unannounced_commit,
)

__all__ = [
    "ASSET_GROUP",
    "CATALOG_SCHEME",
    "DEFAULT_CATALOG",
    "DEFAULT_SCHEMA",
    "check_outlets",
    "declare_table_outlet",
    "emits_event",
    "event_extra",
    "is_template",
    "mapped_outlets",
    "record_table_event",
    "table_alias",
    "table_asset",
    "table_asset_uri",
    "table_outlet",
    "unannounced_commit",
]

warnings.warn(
    "airflow_provider_deltacc.assets is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.lineage.assets",
    DeprecationWarning,
    stacklevel=2,
)
