"""The example DAGs end to end: ``dag.test()`` on the SQLite metadata DB, real Spark and Delta (in-process
mode on the test JVM, or the test run's Spark Connect server), and delta-rs as the independent reader of the
results."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.integration.airflow_face.rival import Rival
from tests.support.airflow_runs import xcom_value
from tests.support.s3_server import S3Server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(1.5)]

MERGES_DAG = "example_deltacc_concurrent_merges"
SENSOR_DAG = "example_deltacc_sensor_downstream"
CONNECT_DAG = "example_deltacc_spark_connect"


def _states(dr: Any) -> dict[tuple[str, int], tuple[str, int]]:
    return {(ti.task_id, ti.map_index): (str(ti.state), ti.try_number) for ti in dr.get_task_instances()}


def test_concurrent_merges_dag_retries_a_real_conflict(
    load_example_dag: Callable[[str], Any], example_root: Path, spark: SparkSession, rival: Rival
) -> None:
    from deltalake import DeltaTable

    dag = load_example_dag(MERGES_DAG)
    module = sys.modules[dag.get_task("check_orders").python_callable.__module__]
    table = module.ORDERS_TABLE
    assert table.startswith(str(example_root))
    rival_rows: list[tuple[Any, ...]] = []

    def blind_append_into_the_merge_partition(spec: dict[str, Any]) -> None:
        import pyarrow.parquet as pq

        day = pq.read_table(spec["source"]["path"]).column("date")[0].as_py()
        rival_rows.append((900, day, 1.0, "rival"))
        spark.createDataFrame(
            rival_rows, "order_id BIGINT, date DATE, amount DOUBLE, status STRING"
        ).write.format("delta").mode("append").save(table)

    hold = rival.plan("merge", table, blind_append_into_the_merge_partition, gate_column="order_id")

    dr = dag.test()

    rival.check()
    assert any("MERGE operation" in d for d in hold.active_jobs), hold.active_jobs
    states = _states(dr)
    assert str(dr.state) == "success", states
    assert all(state == "success" for state, _ in states.values()), states
    merge_indexes = sorted(i for (task, i) in states if task == "merge_batch")
    assert merge_indexes == [0, 1]

    reports = {i: xcom_value(dr, "merge_batch", REPORT_XCOM_KEY, i) for i in merge_indexes}
    assert all(r["status"] == "committed" for r in reports.values()), reports
    conflicted = [r for r in reports.values() if any(a.get("conflict") for a in r["attempts"])]
    assert len(conflicted) == 1, reports
    report = conflicted[0]
    first, last = report["attempts"][0], report["attempts"][-1]
    assert (
        first["conflict"]["kind"] == "append"
        and first["conflict"]["partition"] == f"[date={rival_rows[0][1]}]"
    )
    assert last.get("conflict") is None and len(report["attempts"]) == 2
    assert report["txn_app_id"].startswith(f"airflow/{MERGES_DAG}/merge_batch/")

    # delta-rs reads what Spark wrote: seed + merged batches, plus the rival's row, each exactly once.
    rows = sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda r: r["order_id"])
    rival_row = dict(zip(("order_id", "date", "amount", "status"), rival_rows[0], strict=True))
    expected = [*module.expected_rows(), rival_row]
    assert rows == sorted(expected, key=lambda r: r["order_id"])
    assert xcom_value(dr, "check_orders") == {
        "version": DeltaTable(table).version(),
        "rows": 8,
        "other_writers_rows": 1,
    }


def test_sensor_dag_defers_until_a_merge_commits(
    load_example_dag: Callable[[str], Any], spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sensor finds no MERGE, defers; the trigger (run inline by dag.test) polls the log with delta-rs
    until a MERGE made meanwhile by another writer lands; the downstream task then reads the table."""
    import datetime as dt

    import airflow_provider_deltacc.triggers.table_version as trigger_module

    dag = load_example_dag(SENSOR_DAG)
    table = sys.modules[dag.get_task("summarise").python_callable.__module__].ORDERS_TABLE
    schema = "order_id BIGINT, date DATE, amount DOUBLE, status STRING"
    day = dt.date(2026, 11, 1)
    seed = spark.createDataFrame([(1, day, 1.0, "open")], schema)
    seed.write.format("delta").partitionBy("date").save(table)
    dag.get_task("wait_for_merge").poke_interval = 0.5

    polled_in_vain = threading.Event()
    real_check = trigger_module.check_table

    def check_table(*args: Any, **kwargs: Any) -> Any:
        match = real_check(*args, **kwargs)
        if match is None:
            polled_in_vain.set()
        return match

    monkeypatch.setattr(trigger_module, "check_table", check_table)
    merged: list[BaseException | None] = []

    def merge_once_the_trigger_waits() -> None:
        try:
            assert polled_in_vain.wait(120), "the trigger never polled"
            from delta.tables import DeltaTable as SparkDeltaTable

            source = spark.createDataFrame([(1, day, 1.0, "shipped"), (2, day, 2.0, "shipped")], schema)
            SparkDeltaTable.forPath(spark, table).alias("t").merge(
                source.alias("s"), "t.order_id = s.order_id"
            ).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
            merged.append(None)
        except BaseException as exc:
            merged.append(exc)

    writer = threading.Thread(target=merge_once_the_trigger_waits, daemon=True)
    writer.start()
    dr = dag.test(run_conf={"after_version": 0})
    writer.join(timeout=120)

    assert merged == [None], merged
    states = _states(dr)
    assert states == {("wait_for_merge", -1): ("success", 1), ("summarise", -1): ("success", 1)}, states
    match = xcom_value(dr, "wait_for_merge")
    assert (match["version"], match["operation"]) == (1, "MERGE")
    summary = xcom_value(dr, "summarise")
    assert summary["merge_version"] == 1 and summary["read_version"] == 1
    assert summary["per_date"] == {"2026-11-01": {"rows": 2, "shipped": 2}}


def test_spark_connect_dag_appends_and_merges_over_connect(
    load_example_dag: Callable[[str], Any], spark_connect_default: list[str]
) -> None:
    """The Spark Connect example runs in spark_connect mode although DELTACC_EXECUTION_MODE says in_process:
    mapped appends and a pinned MERGE as thin clients of the test run's server. A second run creates nothing
    (answered from the Delta log) and adds its own orders; delta-rs reads every run's rows exactly once."""
    from deltalake import DeltaTable

    dag = load_example_dag(CONNECT_DAG)
    module = sys.modules[dag.get_task("check_orders").python_callable.__module__]
    table = module.ORDERS_TABLE

    runs = [dag.test(), dag.test()]

    for dr in runs:
        states = _states(dr)
        assert str(dr.state) == "success", states
        assert all(state == ("success", 1) for state in states.values()), states
        assert sorted(i for (task, i) in states if task == "append_batch") == [0, 1, 2]
    first, second = runs
    assert first.run_id != second.run_id
    # Every Delta job of the first run went over Connect; the second run's create was not started at all.
    job = f"deltacc-{CONNECT_DAG}-"
    assert spark_connect_default == [
        f"{job}create_orders",
        *[f"{job}append_batch"] * 3,
        f"{job}ship_orders",
        *[f"{job}append_batch"] * 3,
        f"{job}ship_orders",
    ]
    created = xcom_value(second, "create_orders", REPORT_XCOM_KEY)
    assert created["metrics"]["answered_by"] == "delta-log", created

    data = DeltaTable(table).to_pyarrow_table().to_pylist()
    for dr in runs:
        mine = sorted((r for r in data if r["run_id"] == dr.run_id), key=lambda r: (r["order_id"], r["date"]))
        assert mine == module.expected_rows(dr.run_id)
    assert len(data) == 2 * len(module.expected_rows("any"))
    merge = xcom_value(second, "ship_orders", REPORT_XCOM_KEY)
    assert merge["status"] == "committed"
    assert merge["metrics"]["partition_pin"] == "(`t`.`date` IN (DATE '2026-11-01'))"
    assert xcom_value(second, "check_orders") == {
        "version": DeltaTable(table).version(),
        "rows": len(module.expected_rows("any")),
        "runs_in_table": 2,
        "merge_partition_pin": merge["metrics"]["partition_pin"],
    }
    operations = [h["operation"] for h in sorted(DeltaTable(table).history(), key=lambda h: h["version"])]
    assert operations == ["WRITE", *(["WRITE"] * 3 + ["MERGE"]) * 2]  # one create, then per run


def test_pyspark_writers_dag_pays_interest_once_per_branch_and_summarises(
    load_example_dag: Callable[[str], Any],
) -> None:
    """The PySpark example: decorated MERGEs whose functions collect balances eagerly, mapped over branches,
    then a transform with a join, a window function and a Python UDF; delta-rs reads the results."""
    from deltalake import DeltaTable

    dag = load_example_dag("example_pyspark_writers")
    module = sys.modules[dag.get_task("pay_interest").python_callable.__module__]

    dr = dag.test()

    states = _states(dr)
    assert all(state == ("success", 1) for state in states.values()), states
    assert sorted(i for (task, i) in states if task == "pay_interest") == [0, 1, 2]
    rows = DeltaTable(module.ACCOUNTS).to_pyarrow_table().to_pylist()
    balances = {r["account"]: r["balance"] for r in rows}
    assert balances == {account: 10_100 for _, account, _ in module.opening_rows()}  # 1% paid exactly once
    summary = sorted(DeltaTable(module.SUMMARY).to_pyarrow_table().to_pylist(), key=lambda r: r["branch"])
    assert summary == [
        {"branch": b, "region": r, "top_account": f"{b}-1", "top_balance": 10_100, "tier": "gold"}
        for b, r in (("east", "apac"), ("north", "eu"), ("south", "eu"))
    ]
    report = xcom_value(dr, "branch_summary", REPORT_XCOM_KEY)
    assert report["status"] == "committed" and report["metrics"]["source_function"].endswith("branch_summary")


def test_s3_writers_dag_lands_every_batch_once_on_the_s3_server(
    load_example_dag: Callable[[str], Any],
    spark: SparkSession,
    s3_server: S3Server,
    aws_conn_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deltalake import DeltaTable

    table = f"s3a://{s3_server.new_bucket()}/deltacc-examples/events"
    monkeypatch.setenv("DELTACC_S3_TABLE", table)
    monkeypatch.setenv("DELTACC_AWS_CONN_ID", aws_conn_id)
    dag = load_example_dag("example_deltacc_s3_writers")

    dr = dag.test()

    states = _states(dr)
    assert str(dr.state) == "success", states
    assert xcom_value(dr, "check_events") == {"version": 4, "events": 12}  # 4 appends (v0-v3), OPTIMIZE
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.history(1)[0]["operation"] == "OPTIMIZE"
