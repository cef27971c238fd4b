"""Every example DAG parses without errors, cannot pile up runs or Spark jobs when unpaused, uses the
connection of its execution mode, and parsing them imports no pyspark, delta or py4j."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.hooks.deltacc import DEFAULT_CONN_IDS, EXECUTION_MODES
from airflow_provider_deltacc.operators.base import DeltaBaseOperator

pytestmark = pytest.mark.unit

DAGS_FOLDER = Path(__file__).resolve().parents[3] / "dags"
EXPECTED = {
    "example_deltacc_asset_downstream",
    "example_deltacc_concurrent_merges",
    "example_deltacc_sensor_downstream",
    "example_deltacc_spark_connect",
}
#: The example that runs in spark_connect mode whatever DELTACC_EXECUTION_MODE says.
CONNECT_DAG = "example_deltacc_spark_connect"


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


def _delta_tasks(dag: Any) -> list[Any]:
    """The tasks of ``dag`` that run a Delta job (mapped or not)."""
    return [
        task
        for task in dag.tasks
        if issubclass(getattr(task, "operator_class", None) or type(task), DeltaBaseOperator)
    ]


def _mode_and_conn_id(dag: Any, task: Any) -> tuple[str, str | None]:
    """A Delta task's execution mode and conn_id as it will run: a mapped task gets default_args when it
    is unmapped."""
    if hasattr(task, "partial_kwargs"):
        settings = {**dag.default_args, **task.partial_kwargs}
        return settings.get("execution_mode") or "spark_submit", settings.get("conn_id")
    return task.execution_mode, task.conn_id


def test_no_example_dag_piles_up_runs_or_spark_jobs() -> None:
    """Unpaused, an hourly example must not start a run per missed interval nor a second run while one is
    slow, and its Spark tasks must not all start at once; the pool must be one that exists without set-up
    (a task in a pool that does not exist is never scheduled)."""
    bag = _dagbag_class()(dag_folder=str(DAGS_FOLDER))
    assert set(bag.dags) >= EXPECTED
    for dag_id, dag in bag.dags.items():
        assert dag.max_active_runs == 1, dag_id
        assert dag.catchup is False, dag_id
        assert {task.pool for task in dag.tasks} == {"default_pool"}, dag_id
        if _delta_tasks(dag):
            assert dag.max_active_tasks <= 4, (dag_id, dag.max_active_tasks)


@pytest.mark.parametrize("mode", EXECUTION_MODES)
def test_every_delta_task_uses_the_connection_of_its_mode(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DELTACC_EXECUTION_MODE switches every example but the Spark Connect one, and no example pins a
    connection of another mode (the hook then picks the mode's default connection)."""
    monkeypatch.setenv("DELTACC_EXECUTION_MODE", mode)
    bag = _dagbag_class()(dag_folder=str(DAGS_FOLDER))
    assert not bag.import_errors, bag.import_errors
    checked = 0
    for dag_id, dag in bag.dags.items():
        for task in _delta_tasks(dag):
            task_mode, conn_id = _mode_and_conn_id(dag, task)
            assert task_mode == ("spark_connect" if dag_id == CONNECT_DAG else mode), (dag_id, task.task_id)
            assert conn_id in (None, DEFAULT_CONN_IDS[task_mode]), (dag_id, task.task_id, conn_id)
            checked += 1
    assert checked >= 20


def test_mapped_merges_keep_the_delta_retry_defaults() -> None:
    """``.partial()`` reads defaults from the operator's signature: the mapped MERGEs get the Delta
    retry policy and two Airflow retries, and execution_mode comes from default_args at unmapping."""
    from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy

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


def test_the_asset_consumer_is_scheduled_on_the_table_the_merges_write() -> None:
    bag = _dagbag_class()(dag_folder=str(DAGS_FOLDER))
    writer = bag.dags["example_deltacc_concurrent_merges"].get_task("create_orders")
    consumer = bag.dags["example_deltacc_asset_downstream"]
    assert [outlet.uri for outlet in writer.outlets] == [writer.table_outlet.uri]
    assert list(consumer.timetable.asset_condition.objects) == [writer.table_outlet]
