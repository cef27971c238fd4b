"""Moved to :mod:`airflow_provider_deltacc.api_support.durations`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.api_support.durations import (
    optional_seconds,
    seconds_argument,
)

__all__ = [
    "optional_seconds",
    "seconds_argument",
]

warnings.warn(
    "airflow_provider_deltacc.durations is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.api_support.durations",
    DeprecationWarning,
    stacklevel=2,
)
