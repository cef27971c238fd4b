"""The task-group example DAGs end to end: ``dag.test()`` on the SQLite metadata DB, real Spark and Delta
(in-process on the shared test JVM), delta-rs as the independent reader. Every task fails its first try
right AFTER its real work (commits included) and is retried: the results must not change."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.lineage.assets import table_asset_uri
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.support.airflow_runs import xcom_value
from tests.support.asset_events import asset_events

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

INGESTION_DAG = "example_deltacc_ingestion_staging"
MAINTENANCE_DAG = "example_deltacc_maintenance"
CONTENTION_DAG = "example_deltacc_contention_demo"
CLUSTERED_DAG = "example_deltacc_clustered_table"
GROUP = "ingest_orders"


def _states(dr: Any) -> dict[str, tuple[str, int]]:
    return {f"{ti.task_id}[{ti.map_index}]": (str(ti.state), ti.try_number) for ti in dr.get_task_instances()}


def _rows(table: str, key: str) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda r: r[key])


def _module(dag: Any, task_id: str) -> Any:
    return sys.modules[dag.get_task(task_id).python_callable.__module__]


def _all_retried_once(dr: Any, calls: Counter[str]) -> None:
    states = _states(dr)
    assert str(dr.state) == "success", states
    assert all(state == ("success", 2) for state in states.values()), states
    assert set(calls) == set(states) and set(calls.values()) == {2}, calls


def _ingestion_survived_every_retry(dr: Any, module: Any, calls: Counter[str]) -> list[str]:
    """Check an ingestion run whose every task failed once after its work and was retried: the target
    equals the expected rows, exactly once; staging holds no consumed batch; the retried writers were
    skipped as duplicates. Returns the run's batch ids."""
    from deltalake import DeltaTable

    _all_retried_once(dr, calls)
    assert sorted(k for k in calls if k.startswith(f"{GROUP}.append_batch")) == [
        f"{GROUP}.append_batch[0]",
        f"{GROUP}.append_batch[1]",
    ]
    # Independent check with delta-rs: every order once, at its latest state (order 1 from source 1).
    target = _rows(module.TARGET_TABLE, "order_id")
    assert target == module.expected_rows(2)
    assert next(r for r in target if r["order_id"] == 1)["status"] == "seen-by-1"
    batch_ids = xcom_value(dr, f"{GROUP}.plan_batches", "batch_ids")
    assert batch_ids == [f"{INGESTION_DAG}/{GROUP}/{dr.run_id}/{i}" for i in (0, 1)]
    assert DeltaTable(module.STAGING_TABLE).to_pyarrow_table().num_rows == 0  # no consumed batch left

    # The retried tries found their identity committed: reported as skipped duplicates, no second write.
    for task_id, index in (
        (f"{GROUP}.append_batch", 0),
        (f"{GROUP}.append_batch", 1),
        (f"{GROUP}.merge_batches", -1),
    ):
        report = xcom_value(dr, task_id, REPORT_XCOM_KEY, index)
        assert report["status"] == "skipped_duplicate", (task_id, report)
        assert report["skipped_duplicate"] is True, (task_id, report)
    history = DeltaTable(module.TARGET_TABLE).history()
    assert [h["operation"] for h in history].count("MERGE") == 1
    assert xcom_value(dr, "check_orders")["staged_rows_left"] == 0
    return list(batch_ids)


def test_ingestion_then_maintenance_survive_a_retry_of_every_task(
    load_example_dag: Callable[[str], Any],
    spark: SparkSession,
    fail_every_task_once: Callable[[Any], Counter[str]],
) -> None:
    """Ingestion: every task commits (or computes), fails, and is retried; in particular the MERGE is killed
    after its commit and before the cleanup. The target equals the expected rows, exactly once; staging
    holds no consumed batch; the retried MERGE was skipped as a duplicate. Then maintenance on the result."""
    from deltalake import DeltaTable

    from airflow_provider_deltacc.spark_job.main import run_job
    from airflow_provider_deltacc.task_groups import merge_source_query

    dag = load_example_dag(INGESTION_DAG)
    module = _module(dag, "check_orders")
    calls = fail_every_task_once(dag)

    dr = dag.test()

    batch_ids = _ingestion_survived_every_retry(dr, module, calls)

    # Re-running the MERGE after the cleanup (a manual clear): with its identity it is a skipped duplicate,
    # and even without one its source (this run's batches) is gone, so nothing is merged twice.
    merge_report = xcom_value(dr, f"{GROUP}.merge_batches", REPORT_XCOM_KEY)
    spec = {
        "operation": "merge",
        "table": module.TARGET_TABLE,
        "source": {"kind": "sql", "query": merge_source_query(module.STAGING_TABLE, batch_ids)},
        "options": {"keys": ["order_id", "date"], "dedup_order_by": "updated_at"},
        "txn": {"app_id": merge_report["txn_app_id"], "version": merge_report["txn_version"]},
    }
    code, again = run_job(spec, spark)
    assert (code, again["skipped_duplicate"]) == (0, True), again
    # The MERGE's first try committed and failed before Airflow saw it: its retry, a skipped duplicate,
    # announces that commit, once, on the target's asset. Staging is internal: no events.
    merge_version = next(
        h["version"] for h in DeltaTable(module.TARGET_TABLE).history() if h["operation"] == "MERGE"
    )
    target_events = [
        e for e in asset_events(table_asset_uri(module.TARGET_TABLE)) if e["run_id"] == dr.run_id
    ]
    assert [(e["task_id"], e["extra"]["version"], e["extra"]["operation"]) for e in target_events] == [
        (f"{GROUP}.merge_batches", merge_version, "merge")
    ]
    assert asset_events(table_asset_uri(module.STAGING_TABLE)) == []
    code, anonymous = run_job({k: v for k, v in spec.items() if k != "txn"}, spark)
    assert code == 0 and anonymous["status"] in ("noop", "committed"), anonymous
    assert _rows(module.TARGET_TABLE, "order_id") == module.expected_rows(2)

    # Maintenance of the same table: gate -> OPTIMIZE -> VACUUM, each retried once as well.
    maintenance = load_example_dag(MAINTENANCE_DAG)
    maintenance.get_task("table_maintenance.gate").poke_interval = 0.5
    calls = fail_every_task_once(maintenance)
    calls.clear()
    mdr = maintenance.test()
    _all_retried_once(mdr, calls)
    operations = [h["operation"] for h in DeltaTable(module.TARGET_TABLE).history()]
    assert "OPTIMIZE" in operations and "VACUUM END" in operations, operations
    assert _rows(module.TARGET_TABLE, "order_id") == module.expected_rows(2)
    done = {m["operation"] for m in xcom_value(mdr, "report")["maintenance"]}
    assert {"OPTIMIZE", "VACUUM END"} <= done


def test_ingestion_over_spark_connect_survives_a_retry_of_every_task(
    load_example_dag: Callable[[str], Any],
    fail_every_task_once: Callable[[Any], Counter[str]],
    spark_connect_default: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same ingestion run with DELTACC_EXECUTION_MODE=spark_connect: every Delta job of a first try
    runs as a thin client of the test run's Spark Connect server, the retries are answered from the Delta
    log, and delta-rs reads the same result as in-process."""
    monkeypatch.setenv("DELTACC_EXECUTION_MODE", "spark_connect")
    dag = load_example_dag(INGESTION_DAG)
    module = _module(dag, "check_orders")
    calls = fail_every_task_once(dag)

    dr = dag.test()

    _ingestion_survived_every_retry(dr, module, calls)
    # One Connect job per first try of a Delta task (two for the mapped append); the retries started none.
    delta_tasks = ("create_staging", "create_target", "append_batch", "merge_batches", "cleanup_batches")
    expected = Counter({f"deltacc-{INGESTION_DAG}-{GROUP}.{task}": 1 for task in delta_tasks})
    expected[f"deltacc-{INGESTION_DAG}-{GROUP}.append_batch"] = 2
    assert Counter(spark_connect_default) == expected


def test_contention_demo_both_ways_end_equal(
    load_example_dag: Callable[[str], Any], spark: SparkSession
) -> None:
    """Direct MERGEs and the staging pattern over the same overlapping sources give the same table."""
    dag = load_example_dag(CONTENTION_DAG)
    module = _module(dag, "compare")
    dr = dag.test()
    states = _states(dr)
    assert str(dr.state) == "success", states
    expected = module.expected_rows(2)
    assert _rows(module.DIRECT_TABLE, "id") == expected
    assert _rows(module.STAGED_TABLE, "id") == expected
    summary = xcom_value(dr, "compare")
    assert summary["direct"]["merges"] == 2 and summary["staged"]["merges"] == 1
    assert summary["staged"]["conflicts"] == 0


def test_clustered_table_example_stages_merges_and_maintains_a_clustered_target(
    load_example_dag: Callable[[str], Any], spark: SparkSession
) -> None:
    """The staging group creates the target CLUSTER BY (region) and merges once; the maintenance group
    optimizes (incremental clustering) and vacuums it. delta-rs reads the result independently."""
    from deltalake import DeltaTable

    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.delta_log.table_facts import read_table_facts

    dag = load_example_dag(CLUSTERED_DAG)
    dag.get_task("maintain_events.gate").poke_interval = 0.5
    module = _module(dag, "check_events")

    dr = dag.test()

    states = _states(dr)
    assert str(dr.state) == "success", states
    facts = read_table_facts(Table(module.TARGET_TABLE))
    assert facts is not None and facts.clustered and facts.clustering_columns == ("region",)
    assert facts.traits().clustered and not facts.partitioned
    assert _rows(module.TARGET_TABLE, "customer_id") == module.expected_rows(2)
    operations = [h["operation"] for h in DeltaTable(module.TARGET_TABLE).history()]
    assert operations.count("MERGE") == 1 and "OPTIMIZE" in operations and "VACUUM END" in operations
    assert operations[-1] == "CREATE TABLE", operations  # created clustered, not by a plain write
    assert xcom_value(dr, "check_events")["rows"] == len(module.expected_rows(2))
