"""Moved to :mod:`airflow_provider_deltacc.deployment.environment`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.deployment.environment import (
    CONNECT_MODE_ENV,
    ENV_VARS,
    SUBMIT_OPTS_ENV,
    EnvVar,
    config_env_name,
    documented_names,
    settings_table_markdown,
)

__all__ = [
    "CONNECT_MODE_ENV",
    "ENV_VARS",
    "SUBMIT_OPTS_ENV",
    "EnvVar",
    "config_env_name",
    "documented_names",
    "settings_table_markdown",
]

warnings.warn(
    "airflow_provider_deltacc.environment is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.deployment.environment",
    DeprecationWarning,
    stacklevel=2,
)
