"""Moved to :mod:`airflow_provider_deltacc.api_support.deprecations`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.api_support.deprecations import (
    RenamesArguments,
    dag_file_stacklevel,
    renamed_argument,
)

__all__ = [
    "RenamesArguments",
    "dag_file_stacklevel",
    "renamed_argument",
]

warnings.warn(
    "airflow_provider_deltacc.deprecations is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.api_support.deprecations",
    DeprecationWarning,
    stacklevel=2,
)
