"""Fixtures for the Airflow-face integration tests: example DAGs bound to a temp root, in-process mode."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.integration.airflow_face.rival import Rival, rival_writer
from tests.support.airflow_runs import load_dag, use_temp_lease_store

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(autouse=True)
def _lease_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_temp_lease_store(tmp_path, monkeypatch)


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
    return load_dag


@pytest.fixture
def rival(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rival]:
    with rival_writer(spark, tmp_path, monkeypatch) as installed:
        yield installed
