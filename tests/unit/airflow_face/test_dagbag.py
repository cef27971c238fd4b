"""Every example DAG parses without errors, and parsing them imports no pyspark, delta or py4j."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DAGS_FOLDER = Path(__file__).resolve().parents[3] / "dags"
EXPECTED = {"example_deltacc_concurrent_merges", "example_deltacc_sensor_downstream"}


def _dagbag_class() -> type:
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow 3.x
    except ImportError:  # pragma: no cover - Airflow 2.x
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef]
    return DagBag


def test_every_example_dag_imports_without_errors() -> None:
    bag = _dagbag_class()(dag_folder=str(DAGS_FOLDER))
    assert not bag.import_errors, bag.import_errors
    assert set(bag.dags) >= EXPECTED
    assert {Path(f).name for f in bag.file_last_changed} == {p.name for p in DAGS_FOLDER.glob("*.py")}


def test_mapped_merges_keep_the_delta_retry_defaults() -> None:
    """``.partial()`` reads defaults from the operator's signature: the mapped MERGEs get the Delta
    retry policy and two Airflow retries, and execution_mode comes from default_args at unmapping."""
    from airflow_provider_deltacc.retry_policy import DeltaConflictRetryPolicy

    bag = _dagbag_class()(dag_folder=str(DAGS_FOLDER))
    dag = bag.dags["example_deltacc_concurrent_merges"]
    mapped = dag.get_task("merge_batch")
    assert mapped.partial_kwargs["retries"] == 2
    assert isinstance(mapped.partial_kwargs["retry_policy"], DeltaConflictRetryPolicy)
    assert dag.default_args["execution_mode"] == os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
    create = dag.get_task("create_orders")
    assert create.retries == 2 and isinstance(create.retry_policy, DeltaConflictRetryPolicy)


def test_parsing_the_dags_imports_no_spark() -> None:
    code = (
        "import json, sys\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        f"bag = DagBag(dag_folder={str(DAGS_FOLDER)!r})\n"
        "assert bag.dags and not bag.import_errors, bag.import_errors\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'delta', 'py4j'))\n"
        "print(json.dumps(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=os.environ.copy()
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
