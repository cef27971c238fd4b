"""The user's PySpark code inside the commit loop, through Airflow: the TaskFlow decorators and a source
function on a classic operator under ``dag.test()``; in ``spark_submit`` mode, a function that cannot travel
to the driver fails the task at its start, before any lease or write."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.support.airflow_runs import serialize_dag, xcom_value

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

BALANCES = "account STRING, balance BIGINT"


def _balance(spark: SparkSession, table: str) -> int:
    return int(spark.read.format("delta").load(table).where("account = 'a'").collect()[0]["balance"])


def _build_dag(balances: str, ledger: str) -> Any:
    from airflow.sdk import DAG, task

    with DAG("deltacc_test_pyspark_tasks", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        common: dict[str, Any] = {"execution_mode": "in_process", "retries": 0}
        opened = DeltaAppendOperator(
            task_id="open",
            table=balances,
            source={"kind": "rows", "rows": [["a", 0]], "schema": BALANCES},
            **common,
        )

        @task.delta_merge(table=balances, keys=["account"], **common)
        def add(spark: SparkSession, amount: int) -> DataFrame:
            return spark.createDataFrame([("a", _balance(spark, balances) + amount)], BALANCES)

        def double(spark: SparkSession, ds: str | None = None) -> DataFrame:
            assert ds is not None  # the context value the function names
            return spark.createDataFrame([("a", 2 * _balance(spark, balances))], BALANCES)

        doubled = DeltaMergeOperator(
            task_id="double", table=balances, source=double, keys=["account"], **common
        )

        @task.delta_append(table=ledger, partition_by=["day"], **common)
        def record(spark: SparkSession, ds: str | None = None) -> DataFrame:
            return spark.createDataFrame([(ds, _balance(spark, balances))], "day STRING, balance BIGINT")

        @task.delta_overwrite_partitions(table=ledger, **common)
        def restate(spark: SparkSession, ds: str | None = None) -> DataFrame:
            return spark.sql(f"SELECT '{ds}' AS day, CAST(-1 AS BIGINT) AS balance")

        added = add.expand(amount=[1, 10])
        opened >> added >> doubled >> record() >> restate()
    return dag


def test_decorated_and_classic_writers_run_the_users_pyspark_inside_the_commit_loop(
    airflow_db: Path, spark: SparkSession, tmp_path: Path
) -> None:
    from deltalake import DeltaTable

    balances, ledger = str(tmp_path / "balances"), str(tmp_path / "ledger")
    dag = _build_dag(balances, ledger)
    serialize_dag(dag, tmp_path / "no-dags")
    dr = dag.test()

    states = {(ti.task_id, ti.map_index): str(ti.state) for ti in dr.get_task_instances()}
    assert set(states.values()) == {"success"}, states
    assert DeltaTable(balances).to_pyarrow_table().to_pylist() == [{"account": "a", "balance": 22}]
    day = dr.logical_date.strftime("%Y-%m-%d") if dr.logical_date else dr.run_after.strftime("%Y-%m-%d")
    assert DeltaTable(ledger).to_pyarrow_table().to_pylist() == [{"day": day, "balance": -1}]
    # TaskFlow: a decorated task's value is its commit report (also the one report listing every try).
    for index in (0, 1):
        report = xcom_value(dr, "add", map_index=index)
        assert report["status"] == "committed" and report["metrics"]["source_function"].endswith("add")
        assert xcom_value(dr, "add", REPORT_XCOM_KEY, map_index=index) == report
    assert xcom_value(dr, "double", REPORT_XCOM_KEY)["status"] == "committed"


def test_a_function_that_cannot_travel_fails_a_spark_submit_task_at_its_start(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from airflow.sdk import DAG, task

    from airflow_provider_deltacc.leases.factory import store_from_url

    leases = tmp_path / "leases.db"
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{leases}")
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    old_python = tmp_path / "python3.9"
    old_python.write_text("#!/bin/sh\necho 3.9\n")
    old_python.chmod(0o755)
    table = str(tmp_path / "balances")
    lock = threading.Lock()  # an open lock: nothing pickle can carry to a driver

    with DAG("deltacc_test_pyspark_travel", schedule=None, start_date=datetime(2026, 1, 1)) as dag:

        @task.delta_merge(table=table, keys=["account"], execution_mode="spark_submit", retries=0)
        def guarded(spark: SparkSession) -> DataFrame:
            with lock:
                return spark.createDataFrame([("a", 1)], BALANCES)

        @task.delta_merge(
            table=table,
            keys=["account"],
            execution_mode="spark_submit",
            retries=0,
            driver_python=str(old_python),
        )
        def elsewhere(spark: SparkSession) -> DataFrame:
            return spark.createDataFrame([("a", 1)], BALANCES)

        guarded()
        elsewhere()
    serialize_dag(dag, tmp_path / "no-dags")
    dr = dag.test()

    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert states == {"guarded": "failed", "elsewhere": "failed"}
    logged = " ".join(capfd.readouterr())
    assert "guarded" in logged and "cannot travel to the Spark driver" in logged
    assert "Define the function at module level" in logged
    assert f"driver_python={str(old_python)!r} is Python 3.9" in logged
    assert not Path(table).exists()  # nothing written
    with store_from_url(f"sqlite:///{leases}") as store:
        assert store.history(table) == []  # failed before any lease
