"""Moved to :mod:`airflow_provider_deltacc.api_support.lazy_exports`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.api_support.lazy_exports import (
    lazy_exports,
)

__all__ = [
    "lazy_exports",
]

warnings.warn(
    "airflow_provider_deltacc.lazy_exports is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.api_support.lazy_exports",
    DeprecationWarning,
    stacklevel=2,
)
