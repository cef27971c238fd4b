"""Fixtures for the task-group example DAGs: a temp root, in-process jobs, and tasks that fail once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.airflow_runs import load_dag, use_temp_lease_store


class ForcedFailure(RuntimeError):
    """Raised by a task's first try after its real work is done (a crash before Airflow saw success)."""


@pytest.fixture(autouse=True)
def _lease_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_temp_lease_store(tmp_path, monkeypatch)


@pytest.fixture
def example_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "examples"
    monkeypatch.setenv("DELTACC_EXAMPLE_ROOT", str(root))
    monkeypatch.setenv("DELTACC_EXECUTION_MODE", "in_process")
    monkeypatch.setenv("DELTACC_EXAMPLE_SOURCES", "2")
    return root


@pytest.fixture
def load_example_dag(airflow_db: Path, example_root: Path) -> Callable[[str], Any]:
    return load_dag


@pytest.fixture
def fail_every_task_once(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Any], Counter[str]]]:
    """Make every task of a DAG fail its first try AFTER doing its real work, then succeed.

    For a Delta task this is the worst moment: the commit landed, Airflow saw a failure and runs the task
    again. Returns the per-task call counter (``task_id[map_index]``).
    """
    from airflow.providers.standard.operators.python import PythonOperator

    from airflow_provider_deltacc.operators.base import DeltaBaseOperator
    from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor

    calls: Counter[str] = Counter()

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def execute(self: Any, context: Any) -> Any:
            ti = context["ti"]
            key = f"{ti.task_id}[{ti.map_index}]"
            calls[key] += 1
            result = original(self, context)
            if calls[key] == 1:
                raise ForcedFailure(f"{key}: forced failure after the work was done")
            return result

        return execute

    for cls in (DeltaBaseOperator, PythonOperator, DeltaWriteWindowSensor):
        monkeypatch.setattr(cls, "execute", wrap(cls.execute))

    def arm(dag: Any) -> Counter[str]:
        """One immediate retry for every task of ``dag``."""
        for task in dag.tasks:
            if hasattr(task, "partial_kwargs"):
                task.partial_kwargs["retries"] = 1
                task.partial_kwargs["retry_delay"] = timedelta(0)
            else:
                task.retries = 1
                task.retry_delay = timedelta(0)
        return calls

    yield arm
