"""The UI's unit tests: task instances written to the test session's metadata DB (SQLite), removed after."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.ui_metadata import TaskRow, add_task_instances, clear_task_instances


@pytest.fixture
def add_rows(airflow_db: Path) -> Iterator[Callable[..., None]]:
    """``add_rows(*rows)``: insert task instances (with history and reports); their DAGs go at teardown."""
    from airflow.utils.session import create_session

    dag_ids: set[str] = set()

    def add(*rows: TaskRow) -> None:
        dag_ids.update(r.dag_id for r in rows)
        with create_session() as session:
            add_task_instances(session, rows)

    yield add
    with create_session() as session:
        clear_task_instances(session, dag_ids)
