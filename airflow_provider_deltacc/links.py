"""Moved to :mod:`airflow_provider_deltacc.observability.links`.

This path re-exports its names, with a :class:`DeprecationWarning`, for one release.
"""

from __future__ import annotations

import warnings

from airflow_provider_deltacc.observability.links import (
    DeltaCommitReportLink,
)

__all__ = [
    "DeltaCommitReportLink",
]

warnings.warn(
    "airflow_provider_deltacc.links is deprecated and will be removed in the next release; "
    "import from airflow_provider_deltacc.observability.links",
    DeprecationWarning,
    stacklevel=2,
)
