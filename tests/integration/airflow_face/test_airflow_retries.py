"""Two retry levels, seen from Airflow: a conflict that outlasts the in-job retries becomes an Airflow retry
(try 2, with the retry policy's reason on the task instance history); a PROTOCOL_CHANGED conflict and bad
input fail at once although retries are left. Real conflicts, made by a rival writer (see ``rival.py``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.retry_policy import DeltaConflictRetryPolicy
from tests.integration.airflow_face.rival import Rival
from tests.support.airflow_runs import serialize_dag, try_history, xcom_value

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, p STRING, v STRING"
DAG_ID = "deltacc_test_airflow_retries"


def _rows(rows: list[list[Any]]) -> dict[str, Any]:
    return {"kind": "rows", "rows": rows, "schema": SCHEMA}


def _build_dag(orders: str, fresh: str) -> Any:
    from airflow.sdk import DAG

    fast_policy = DeltaConflictRetryPolicy(
        min_delay=timedelta(seconds=1), max_delay=timedelta(seconds=1), jitter=0.0
    )
    with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        common: dict[str, Any] = {"execution_mode": "in_process", "retries": 2, "retry_policy": fast_policy}
        DeltaMergeOperator(
            task_id="retried_merge",
            table=orders,
            source=_rows([[1, "a", "merged"], [3, "a", "new"]]),
            keys=["id", "p"],
            commit_retry={"max_attempts": 1},  # no in-job retry: the first conflict goes to Airflow
            **common,
        )
        DeltaAppendOperator(
            task_id="create_race",
            table=fresh,
            source=_rows([[1, "a", "mine"]]),
            partition_by=["p"],
            **common,
        )
        DeltaMergeOperator(
            task_id="bad_input",
            table=orders,
            source=_rows([[1, "a", "x"]]),
            keys=["no_such_column"],
            **common,
        )
    return dag


def _report(dr: Any, task_id: str) -> dict[str, Any]:
    report: dict[str, Any] = xcom_value(dr, task_id, REPORT_XCOM_KEY)
    return report


def test_exhausted_conflict_is_retried_by_airflow_and_fatal_ones_are_not(
    airflow_db: Path,
    spark: SparkSession,
    rival: Rival,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from deltalake import DeltaTable

    orders, fresh = str(tmp_path / "orders"), str(tmp_path / "fresh")
    base = spark.createDataFrame([(1, "a", "old"), (2, "b", "old")], SCHEMA)
    base.write.format("delta").partitionBy("p").save(orders)

    def blind_append_into_a(spec: dict[str, Any]) -> None:
        spark.createDataFrame([(9, "a", "rival")], SCHEMA).write.format("delta").mode("append").save(orders)

    def create_the_same_table(spec: dict[str, Any]) -> None:
        theirs = spark.createDataFrame([(2, "b", "theirs")], SCHEMA)
        theirs.write.format("delta").partitionBy("p").save(fresh)

    rival.plan("merge", orders, blind_append_into_a, gate_column="id", task_id="retried_merge")
    rival.plan("append", fresh, create_the_same_table, gate_column="id", task_id="create_race")

    dag = _build_dag(orders, fresh)
    serialize_dag(dag, tmp_path / "no-dags")
    dr = dag.test()

    rival.check()
    tis = {ti.task_id: ti for ti in dr.get_task_instances()}
    # 1. in-job retries exhausted -> DeltaConflictRetryable -> RETRY -> try 2 commits from a fresh snapshot.
    merge = tis["retried_merge"]
    assert (str(merge.state), merge.try_number, merge.max_tries) == ("success", 2, 2)
    first_try = try_history(dr)["retried_merge"][0]
    # TaskInstanceHistory records a try that went up_for_retry as failed, with the policy's reason and delay.
    assert (first_try.try_number, str(first_try.state)) == (1, "failed")
    reason = first_try.retry_reason or ""
    assert reason.startswith(f"Delta APPEND conflict on table delta.`file:{orders}` partition [p=a]"), reason
    assert "in-job retries exhausted (1 attempts)" in reason and "Airflow retry 1 of 2" in reason, reason
    assert first_try.retry_delay_override == pytest.approx(1.0)
    final = _report(dr, "retried_merge")
    assert final["status"] == "committed" and len(final["attempts"]) == 1
    rows = {(r["id"], r["p"], r["v"]) for r in DeltaTable(orders).to_pyarrow_table().to_pylist()}
    assert rows == {(1, "a", "merged"), (2, "b", "old"), (3, "a", "new"), (9, "a", "rival")}

    # 2. PROTOCOL_CHANGED (two writers created the same table) -> FAIL at once, retries left unused.
    race = tis["create_race"]
    assert (str(race.state), race.try_number, race.max_tries) == ("failed", 1, 2)
    race_report = _report(dr, "create_race")
    assert race_report["status"] == "conflict_fatal"
    assert race_report["attempts"][-1]["conflict"]["kind"] == "protocol_changed"
    assert {(r["id"], r["v"]) for r in DeltaTable(fresh).to_pyarrow_table().to_pylist()} == {(2, "theirs")}

    # 3. bad input -> FAIL at once.
    bad = tis["bad_input"]
    assert (str(bad.state), bad.try_number, bad.max_tries) == ("failed", 1, 2)
    assert _report(dr, "bad_input")["status"] == "bad_input"
    assert "create_race" not in try_history(dr) and "bad_input" not in try_history(dr)

    # The policy's decisions are logged on the task ("Retry policy decision", action and reason).
    logged = capfd.readouterr().out
    assert "Retry policy decision" in logged
    assert "Delta PROTOCOL_CHANGED conflict on" in logged and "is not retryable" in logged
    assert "bad input, retrying cannot help" in logged
