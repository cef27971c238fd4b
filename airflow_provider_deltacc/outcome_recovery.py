"""Moved to :mod:`airflow_provider_deltacc.delta_log.outcome_recovery`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.delta_log.outcome_recovery import (
    FROM_DELTA_LOG,
    FROM_REPORT_FILE,
    committed_from_log,
    log,
    recover_outcome,
)

__all__ = [
    "FROM_DELTA_LOG",
    "FROM_REPORT_FILE",
    "committed_from_log",
    "log",
    "recover_outcome",
]

warnings.warn(
    "airflow_provider_deltacc.outcome_recovery is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.delta_log.outcome_recovery",
    DeprecationWarning,
    stacklevel=2,
)
