"""The commit loop's exceptions, at their older path: they live in
:mod:`airflow_provider_deltacc.contract.exceptions` with every other error of the core."""

from __future__ import annotations

from airflow_provider_deltacc.contract.exceptions import (
    CommitLoopError,
    ConflictError,
    ConflictFatalError,
    ConflictRetriesExhaustedError,
    UserCodeError,
)

__all__ = [
    "CommitLoopError",
    "ConflictError",
    "ConflictFatalError",
    "ConflictRetriesExhaustedError",
    "UserCodeError",
]
