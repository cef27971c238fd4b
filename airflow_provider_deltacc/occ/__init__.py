"""Airflow-free optimistic-concurrency core: classify Delta commit conflicts, decide, retry, report.

Runs inside the Spark driver; imports only the standard library and tenacity. The tenacity-backed names
(``RetryPolicy``, ``run_commit_loop``) load on first use, so importing this package stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.occ.advice import ADVICE

# Importing the function binds the package attribute ``classify`` to it, not to the submodule.
from airflow_provider_deltacc.occ.classify import classify
from airflow_provider_deltacc.occ.decisions import (
    OperationClass,
    RetryDecision,
    decide,
    decision_table_markdown,
)
from airflow_provider_deltacc.occ.errors import (
    CommitLoopError,
    ConflictError,
    ConflictFatalError,
    ConflictRetriesExhaustedError,
)
from airflow_provider_deltacc.occ.kinds import Conflict, ConflictKind
from airflow_provider_deltacc.occ.outcome import WorkOutcome
from airflow_provider_deltacc.occ.report import AttemptRecord, CommitReport

if TYPE_CHECKING:
    from airflow_provider_deltacc.occ.commit_loop import run_commit_loop
    from airflow_provider_deltacc.occ.policy import RetryPolicy

_LAZY: dict[str, str] = {"RetryPolicy": "policy", "run_commit_loop": "commit_loop"}

__all__ = [
    "ADVICE",
    "AttemptRecord",
    "CommitLoopError",
    "CommitReport",
    "Conflict",
    "ConflictError",
    "ConflictFatalError",
    "ConflictKind",
    "ConflictRetriesExhaustedError",
    "OperationClass",
    "RetryDecision",
    "RetryPolicy",
    "WorkOutcome",
    "classify",
    "decide",
    "decision_table_markdown",
    "run_commit_loop",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
