"""Moved to :mod:`airflow_provider_deltacc.observability.metrics`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.observability.metrics import (
    PREFIX,
    count_live_leases,
    log,
    record_gate,
    record_live_leases,
    record_try,
    table_metric_name,
)

__all__ = [
    "PREFIX",
    "count_live_leases",
    "log",
    "record_gate",
    "record_live_leases",
    "record_try",
    "table_metric_name",
]

warnings.warn(
    "airflow_provider_deltacc.metrics is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.observability.metrics",
    DeprecationWarning,
    stacklevel=2,
)
