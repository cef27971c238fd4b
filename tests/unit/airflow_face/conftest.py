"""Helpers for the Airflow-face unit tests: a task context without a scheduler or database."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest


class FakeTI(SimpleNamespace):
    """The parts of a RuntimeTaskInstance the operators read, plus an XCom sink."""

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def make_context(
    *,
    dag_id: str = "orders_dag",
    task_id: str = "merge_orders",
    run_id: str = "scheduled__2026-11-20T00:00:00+00:00",
    map_index: int = -1,
    try_number: int = 1,
    max_tries: int = 2,
    interval_end: datetime | None = datetime(2026, 11, 21, tzinfo=UTC),
    **extra: Any,
) -> Any:
    """A task context (a plain dict typed as ``Any``, so it stands in for ``airflow.sdk.Context``)."""
    ti = FakeTI(
        dag_id=dag_id,
        task_id=task_id,
        run_id=run_id,
        map_index=map_index,
        try_number=try_number,
        max_tries=max_tries,
        pushed={},
    )
    return {
        "ti": ti,
        "run_id": run_id,
        "data_interval_end": interval_end,
        "logical_date": interval_end,
        "ds": "2026-11-20",
        "params": {"day": "2026-11-20"},
        **extra,
    }


@pytest.fixture
def context() -> Any:
    return make_context()
