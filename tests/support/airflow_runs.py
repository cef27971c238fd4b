"""Helpers for tests that run example DAGs with ``dag.test()``: load a DAG, read what a run left in XCom."""

from __future__ import annotations

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
