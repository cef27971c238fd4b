"""Fixtures for the Airflow-face integration tests: example DAGs bound to a temp root, in-process mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.airflow_face.rival import Rival, rival_writer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DAGS_FOLDER = Path(__file__).resolve().parents[3] / "dags"


@pytest.fixture(autouse=True)
def _lease_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writers take write leases; keep them in this test's own store."""
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{tmp_path / 'leases.db'}")


@pytest.fixture
def example_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example DAGs' environment: tables under a temp root, jobs on the test JVM, two partitions."""
    root = tmp_path / "examples"
    monkeypatch.setenv("DELTACC_EXAMPLE_ROOT", str(root))
    monkeypatch.setenv("DELTACC_EXECUTION_MODE", "in_process")
    monkeypatch.setenv("DELTACC_EXAMPLE_PARTITIONS", "2")
    return root


@pytest.fixture
def load_example_dag(airflow_db: Path, example_root: Path) -> Callable[[str], Any]:
    """Parse dags/ (with the environment above) and return one DAG by id."""

    def load(dag_id: str) -> Any:
        from airflow.dag_processing.dagbag import DagBag

        bag = DagBag(dag_folder=str(DAGS_FOLDER))
        assert not bag.import_errors, bag.import_errors
        return bag.dags[dag_id]

    return load


@pytest.fixture
def rival(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rival]:
    with rival_writer(spark, tmp_path, monkeypatch) as installed:
        yield installed
