"""Airflow-free optimistic-concurrency core: classify Delta commit conflicts, decide, retry, report.

Runs inside the Spark driver; imports only the standard library, tenacity and the job contract
(:mod:`airflow_provider_deltacc.contract`: the operations, the retry policy, conflicts and the commit report).
Every name loads its module on first use, so importing this package stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_deltacc.occ.advice import ADVICE
    from airflow_provider_deltacc.occ.classifier import classify
    from airflow_provider_deltacc.occ.commit_loop import run_commit_loop
    from airflow_provider_deltacc.occ.decisions import (
        ConflictDecision,
        decide_conflict,
        decision_table_markdown,
    )
    from airflow_provider_deltacc.occ.work_result import WorkResult

# Every public name loads its module on first use: DAG files import the operators, which need only a
# few of these, and parsing must stay cheap.
_LAZY: dict[str, str] = {
    "ADVICE": "advice",
    "classify": "classifier",
    "run_commit_loop": "commit_loop",
    "ConflictDecision": "decisions",
    "decide_conflict": "decisions",
    "decision_table_markdown": "decisions",
    "WorkResult": "work_result",
}

__all__ = [
    "ADVICE",
    "ConflictDecision",
    "WorkResult",
    "classify",
    "decide_conflict",
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
