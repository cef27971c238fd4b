"""Moved to :mod:`airflow_provider_deltacc.operators.maintenance_run`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.operators.maintenance_run import (
    RESUME_METHOD,
    Attempt,
    GatedTask,
    MaintenanceRun,
)

__all__ = [
    "RESUME_METHOD",
    "Attempt",
    "GatedTask",
    "MaintenanceRun",
]

warnings.warn(
    "airflow_provider_deltacc.maintenance_run is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.operators.maintenance_run",
    DeprecationWarning,
    stacklevel=2,
)
