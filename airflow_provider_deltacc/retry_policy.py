"""Moved to :mod:`airflow_provider_deltacc.retries.policy`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.retries.policy import (
    DeltaConflictRetryPolicy,
)

__all__ = [
    "DeltaConflictRetryPolicy",
]

warnings.warn(
    "airflow_provider_deltacc.retry_policy is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.retries.policy",
    DeprecationWarning,
    stacklevel=2,
)
