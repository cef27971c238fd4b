"""Helpers for tests that run DAGs with ``dag.test()``: load or register a DAG, read what a run left in XCom,
and read back what a task logged."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"


def use_temp_lease_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writers take write leases; keep them in the test's own SQLite store."""
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{tmp_path / 'leases.db'}")


def load_dag(dag_id: str) -> Any:
    """Parse ``dags/`` with the current environment, fail on import errors, and return one DAG."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER))
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


def xcom_value(dr: Any, task_id: str, key: str = "return_value", map_index: int = -1) -> Any:
    """The XCom a task instance of the run ``dr`` pushed under ``key`` (it must exist)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter_by(dag_id=dr.dag_id, run_id=dr.run_id, task_id=task_id, key=key, map_index=map_index)
            .one()
        )
        return XComModel.deserialize_value(row)


def try_history(dr: Any) -> dict[str, list[Any]]:
    """The earlier tries of the run ``dr``'s task instances (``TaskInstanceHistory`` rows, with the retry
    policy's ``retry_reason`` and ``retry_delay_override``), by task id, oldest first."""
    from airflow.models.taskinstancehistory import TaskInstanceHistory
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(TaskInstanceHistory).filter_by(dag_id=dr.dag_id, run_id=dr.run_id).all()
        history: dict[str, list[Any]] = {}
        for row in sorted(rows, key=lambda r: r.try_number):
            session.expunge(row)
            history.setdefault(row.task_id, []).append(row)
        return history


def serialize_dag(dag: Any, folder: Path) -> None:
    """``dag.test()`` needs the DAG serialized in the DB; a DAG built in a test is in no bundle: write it."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db

    DagBundlesManager().sync_bundles_to_db()
    folder.mkdir()
    bag = DagBag(dag_folder=str(folder))
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)


#: The logger name structlog prints at the end of a line of the task runner, an operator or a hook.
_TASK_LOGGER_RE = re.compile(r"\[(?:task|airflow\.task(?:\.[\w.]+)?)\]")


def task_log_lines(stdout: str, records: list[logging.LogRecord]) -> list[str]:
    """The lines the one task of a ``dag.test()`` run logged, as its task log would hold them (a little more:
    the run's own lines between the task's first and last are counted too).

    The task runner, operators and hooks log through structlog, which ``dag.test()`` prints to stdout: the
    lines from the first such line to the last. Other loggers (the provider's lease heartbeat, ...) are
    standard ``logging`` records: those between ``dag.test()``'s "running task" and "end task" records.

    :param stdout: what the run printed (e.g. ``capfd.readouterr().out``).
    :param records: the root logger's records of the run at INFO (e.g. ``caplog.records``).
    """
    lines = stdout.splitlines()
    marks = [i for i, line in enumerate(lines) if _TASK_LOGGER_RE.search(line)]
    task_lines = lines[marks[0] : marks[-1] + 1] if marks else []
    messages = [record.getMessage() for record in records]
    start = next(i for i, m in enumerate(messages) if m.startswith("[DAG TEST] running task"))
    end = next(i for i, m in enumerate(messages) if m.startswith("[DAG TEST] end task"))
    for record, message in zip(records[start + 1 : end], messages[start + 1 : end], strict=True):
        task_lines += [f"{record.name}: {line}" for line in message.splitlines()]
    return task_lines
