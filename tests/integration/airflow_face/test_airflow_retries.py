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
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
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


def _xcom_keys(dr: Any, task_id: str) -> list[str]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(XComModel.key).filter_by(dag_id=dr.dag_id, run_id=dr.run_id, task_id=task_id)
        return sorted(key for (key,) in rows)


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
    # The table as the DAG wrote it; the MERGE was pinned to p (a key), so the advice is about the rival.
    assert reason.startswith(
        f"Delta APPEND conflict on table {orders} partition [p=a]: in-job retries exhausted at attempt 1 "
        "of 1; Airflow try 2 of 3 starts in 1 s from a fresh snapshot. This write is already pinned to its "
        "partitions (p)"
    ), reason
    assert "Pin the target partitions" not in reason
    assert len(reason) < 500, "Airflow keeps 500 characters of a retry reason"
    assert first_try.retry_delay_override == pytest.approx(1.0)
    # One report, pushed once, listing both tries: the lost one with the decision and reason, then the commit.
    final = _report(dr, "retried_merge")
    assert final["status"] == "committed" and len(final["attempts"]) == 1
    assert final["tries_source"] == "task_state_store"
    lost, won = final["tries"]
    assert (lost["try_number"], lost["status"], lost["decision"], lost["reason"]) == (
        1,
        "conflict_exhausted",
        "retry",
        reason,
    )
    (attempt,) = lost["attempts"]
    assert attempt["conflict"]["kind"] == "append" and attempt["conflict"]["partition"] == "[p=a]"
    assert attempt["conflict"]["winning_version"] == 1 and attempt["wasted_s"] > 0
    assert (won["try_number"], won["status"], won["decision"]) == (2, "committed", None)
    keys = _xcom_keys(dr, "retried_merge")
    assert REPORT_XCOM_KEY in keys and "return_value" not in keys, keys
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

    # The policy's decisions are logged on the task ("Retry policy decision", action and reason), and the
    # failed try's failure opens with one line stating the decision and the reason, before the traceback.
    logged = capfd.readouterr().out
    assert "Retry policy decision" in logged
    top = logged.index(f"Try 1 of 3 failed, Airflow decision RETRY: {reason[:60]}")
    # The DAG's other tasks fail too, in an order dag.test() chooses: look only at this try's own lines.
    this_try = logged.rindex(f"Running Delta MERGE on {orders}", 0, top)
    assert "Task failed with exception" not in logged[this_try:top]
    assert "Delta conflict APPEND on" not in logged[this_try:top]
    assert "Task failed with exception" in logged[top:] and "Delta conflict APPEND on" in logged[top:]
    assert "Delta PROTOCOL_CHANGED conflict on" in logged and "is not retryable" in logged
    assert "bad input, retrying cannot help" in logged


def test_without_the_task_state_store_the_tries_are_kept_in_a_variable_until_the_task_ends(
    airflow_db: Path, spark: SparkSession, rival: Rival, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback on the real path: the task state store fails (as a broken store backend would), so the
    tries go through an Airflow Variable, which is deleted once the task instance has ended."""
    from airflow.models.variable import Variable as VariableModel
    from airflow.sdk import DAG
    from airflow.utils.session import create_session

    from airflow_provider_deltacc.retries import tries

    def unavailable(self: Any) -> list[dict[str, Any]]:
        raise RuntimeError("task state store unavailable")

    monkeypatch.setattr(tries._StateStoreHistory, "load", unavailable)
    orders = str(tmp_path / "orders")
    spark.createDataFrame([(1, "a", "old")], SCHEMA).write.format("delta").partitionBy("p").save(orders)

    def blind_append_into_a(spec: dict[str, Any]) -> None:
        spark.createDataFrame([(9, "a", "rival")], SCHEMA).write.format("delta").mode("append").save(orders)

    rival.plan("merge", orders, blind_append_into_a, gate_column="id", task_id="retried_merge")
    policy = DeltaConflictRetryPolicy(
        min_delay=timedelta(seconds=1), max_delay=timedelta(seconds=1), jitter=0
    )
    with DAG(f"{DAG_ID}_fallback", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaMergeOperator(
            task_id="retried_merge",
            table=orders,
            source=_rows([[1, "a", "merged"]]),
            keys=["id", "p"],
            commit_retry={"max_attempts": 1},
            execution_mode="in_process",
            retries=2,
            retry_policy=policy,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    dr = dag.test()

    rival.check()
    final = _report(dr, "retried_merge")
    assert final["tries_source"] == "variable"
    assert [(t["try_number"], t["status"], t["decision"]) for t in final["tries"]] == [
        (1, "conflict_exhausted", "retry"),
        (2, "committed", None),
    ]
    assert final["tries"][0]["reason"] == try_history(dr)["retried_merge"][0].retry_reason
    with create_session() as session:
        left = session.query(VariableModel).filter(VariableModel.key.like("deltacc_tries.%")).count()
    assert left == 0, "the fallback Variable is deleted when the task instance ends"
