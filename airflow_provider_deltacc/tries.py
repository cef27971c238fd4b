"""Moved to :mod:`airflow_provider_deltacc.retries.tries`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.retries.tries import (
    REPORT_XCOM_KEY,
    TRIES_KEY,
    TryDecision,
    TryHistory,
    log,
    record_try,
    report_tries,
    try_entry,
    variable_key,
)

__all__ = [
    "REPORT_XCOM_KEY",
    "TRIES_KEY",
    "TryDecision",
    "TryHistory",
    "log",
    "record_try",
    "report_tries",
    "try_entry",
    "variable_key",
]

warnings.warn(
    "airflow_provider_deltacc.tries is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.retries.tries",
    DeprecationWarning,
    stacklevel=2,
)
