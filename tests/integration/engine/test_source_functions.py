"""The user's own PySpark code as the source, on real Delta, on a classic and a Spark Connect session.

A source function is called again in every attempt: a balance it collects eagerly is read again after a
conflict, so a read-modify-write that loses to a rival writer is redone from the rival's result. Its bad
input and its own exceptions fail the job with nothing written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.source_function import SourceFunction
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log.fast_path import consult_log
from airflow_provider_deltacc.spark_job.main import run_job
from tests.support.gate import Gate
from tests.support.held import hold

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2)]

ACCOUNTS = "account STRING, balance BIGINT"
FAST_RETRIES = {"max_attempts": 4, "min_wait_s": 0.05, "max_wait_s": 0.2}


def _create(spark: SparkSession, path: str, rows: list[tuple[Any, ...]], schema: str) -> None:
    spark.createDataFrame(rows, schema).write.format("delta").save(path)


def _version(path: str) -> int:
    from deltalake import DeltaTable

    return DeltaTable(path).version()


def _rows(path: str, order_by: str) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda row: row[order_by])


def _merge(table: str, function: Callable[..., Any], **options: Any) -> dict[str, Any]:
    return {
        "operation": "merge",
        "table": table,
        "source": {"kind": "callable", "function": SourceFunction(function)},
        "options": {"keys": ["account"], **options},
        "commit_retry": FAST_RETRIES,
    }


def _held_first_attempt(gate: Gate, column: str) -> Callable[[DataFrame, int], DataFrame]:
    def hook(frame: DataFrame, attempt: int) -> DataFrame:
        # One partition: held in one task, so the rival's job has the other task slot.
        return gate.hold(frame.coalesce(1), column) if attempt == 1 else frame

    return hook


def test_each_attempt_calls_the_function_again_and_a_rerun_does_not_call_it(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str, tmp_path: Path
) -> None:
    _create(spark, table_path, [("a", 0)], ACCOUNTS)
    calls: list[int] = []

    def add_one(spark: SparkSession) -> DataFrame:
        # An eager read: the value is baked into the DataFrame as a literal, as user code often does.
        balance = spark.read.format("delta").load(table_path).where("account = 'a'").collect()[0][1]
        calls.append(balance)
        return spark.createDataFrame([("a", balance + 1)], ACCOUNTS)

    spec = {**_merge(table_path, add_one), "txn": {"app_id": "rmw", "version": 1}}
    gate = Gate(tmp_path)
    results: list[tuple[int, dict[str, Any]]] = []
    with hold(
        gate,
        lambda: results.append(
            run_job(spec, new_session(), source_hook=_held_first_attempt(gate, "account"))
        ),
    ):
        spark.sql(f"UPDATE delta.`{table_path}` SET balance = balance + 10")  # the rival commits meanwhile

    code, report = results[0]
    assert code == ExitCode.SUCCESS, report
    assert [a["outcome"] for a in report["attempts"]] == ["conflict", "committed"], report["summary"]
    assert calls == [0, 10]  # the second attempt read the rival's balance, not the first call's
    assert _rows(table_path, "account") == [{"account": "a", "balance": 11}]
    assert report["metrics"]["source_function"].endswith("add_one")

    version = _version(table_path)
    code, again = run_job(spec, new_session())
    assert code == ExitCode.SUCCESS and again["skipped_duplicate"], again
    assert calls == [0, 10] and _version(table_path) == version  # answered without calling the function


def test_a_transform_with_a_join_a_window_and_a_python_udf_is_redone_after_a_lost_conflict(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str, tmp_path: Path
) -> None:
    _create(
        spark,
        table_path,
        [("c1", "eu", 5, "small")],
        "customer STRING, region STRING, top BIGINT, band STRING",
    )
    calls: list[int] = []

    def top_orders(spark: SparkSession) -> DataFrame:
        calls.append(1)
        orders = spark.createDataFrame(
            [(1, "c1", 50), (2, "c1", 150), (3, "c2", 70), (4, "c2", 20)],
            "id BIGINT, customer STRING, amount BIGINT",
        )
        customers = spark.createDataFrame([("c1", "eu"), ("c2", "us")], "customer STRING, region STRING")
        spark.udf.register("band", lambda amount: "big" if amount >= 100 else "small", "string")
        ranked = orders.join(customers, "customer").selectExpr(
            "customer",
            "region",
            "amount",
            "row_number() OVER (PARTITION BY customer ORDER BY amount DESC) AS rank",
        )
        return ranked.where("rank = 1").selectExpr(
            "customer", "region", "amount AS top", "band(amount) AS band"
        )

    spec = {
        "operation": "merge",
        "table": table_path,
        "source": {"kind": "callable", "function": SourceFunction(top_orders)},
        "options": {"keys": ["customer"]},
        "commit_retry": FAST_RETRIES,
    }
    gate = Gate(tmp_path)
    results: list[tuple[int, dict[str, Any]]] = []
    with hold(
        gate,
        lambda: results.append(
            run_job(spec, new_session(), source_hook=_held_first_attempt(gate, "customer"))
        ),
    ):
        spark.createDataFrame(
            [("c3", "apac", 9, "small")], "customer STRING, region STRING, top BIGINT, band STRING"
        ).write.format("delta").mode("append").save(table_path)

    code, report = results[0]
    assert code == ExitCode.SUCCESS, report
    assert report["attempts"][0]["outcome"] == "conflict" and len(calls) == 2, report["summary"]
    assert _rows(table_path, "customer") == [
        {"customer": "c1", "region": "eu", "top": 150, "band": "big"},
        {"customer": "c2", "region": "us", "top": 70, "band": "small"},
        {"customer": "c3", "region": "apac", "top": 9, "band": "small"},
    ]


def _not_a_frame(spark: SparkSession) -> list[int]:
    return [1, 2]


def _no_key_column(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([("x", 1)], "name STRING, balance BIGINT")


def _raises(spark: SparkSession) -> DataFrame:
    rates = {"eur": 1.0}
    return spark.createDataFrame([("a", int(rates["usd"]))], ACCOUNTS)


@pytest.mark.parametrize(
    ("function", "code", "field", "says"),
    [
        (
            _not_a_frame,
            ExitCode.BAD_INPUT,
            "source",
            "returned list; a source function must return a pyspark DataFrame",
        ),
        (_no_key_column, ExitCode.BAD_INPUT, "options.keys[0]", "the source has no such column"),
        (
            _raises,
            ExitCode.FAILURE,
            None,
            "source function tests.integration.engine.test_source_functions._raises raised KeyError: 'usd'",
        ),
    ],
    ids=["not-a-dataframe", "schema-does-not-fit", "raises"],
)
def test_bad_input_and_the_functions_own_errors_write_nothing(
    spark: SparkSession,
    table_path: str,
    function: Callable[..., Any],
    code: int,
    field: str | None,
    says: str,
) -> None:
    _create(spark, table_path, [("a", 0)], ACCOUNTS)
    got, report = run_job(_merge(table_path, function), spark)

    assert got == code, report
    error = report["error"]
    assert says in error["message"], error
    assert error.get("field") == field
    assert len(report["attempts"]) == 1  # never retried in the job: input errors and the user's own errors
    assert _version(table_path) == 0
    if function is _raises:  # the user's own traceback, from the line that raised
        assert 'int(rates["usd"])' in error["message"] and error["type"] == "SourceFunctionError"


def test_an_identity_the_worker_saw_unrecorded_is_not_read_again_and_a_stale_sighting_writes_nothing(
    spark: SparkSession,
    new_session: Callable[[], SparkSession],
    table_path: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker's read of the log showing the identity unrecorded (``known_snapshot.txn_unrecorded``) spares
    the first attempt its own read of the recorded txn versions; a sighting gone stale (the identity committed
    since) never writes twice."""
    import airflow_provider_deltacc.engine.operations.base as base

    _create(spark, table_path, [("a", 0)], ACCOUNTS)
    txn_reads: list[tuple[str, ...]] = []
    real_read = base.read_table_state_if_exists

    def spying_read(session: Any, table: str, app_ids: tuple[str, ...] = ()) -> Any:
        if app_ids:
            txn_reads.append(app_ids)
        return real_read(session, table, app_ids)

    monkeypatch.setattr(base, "read_table_state_if_exists", spying_read)
    calls: list[int] = []

    def add_one(spark: SparkSession) -> DataFrame:
        balance = spark.read.format("delta").load(table_path).where("account = 'a'").collect()[0][1]
        calls.append(balance)
        return spark.createDataFrame([("a", balance + 1)], ACCOUNTS)

    job = parse_spec({**_merge(table_path, add_one), "txn": {"app_id": "rmw", "version": 1}})
    answer = consult_log(job)
    assert answer.known_snapshot is not None and answer.known_snapshot.txn_unrecorded
    spec = answer.spec_to_run(job)
    code, report = run_job(spec, new_session())
    assert code == ExitCode.SUCCESS and report["status"] == "committed", report
    assert calls == [0] and txn_reads == []  # the worker's sighting stood for the identity check

    # The same sighting again, now stale: the identity was recorded since. It is trusted (the attempt plans
    # from the worker's snapshot); Delta's own check at commit time skipped the write, and the state after it
    # says why.
    committed_at = _version(table_path)
    code, again = run_job(spec, new_session())
    assert code == ExitCode.SUCCESS and again["skipped_duplicate"], again
    assert _version(table_path) == committed_at and _rows(table_path, "account")[0]["balance"] == 1
    assert calls == [0, 1] and txn_reads == [("rmw",)]


def test_a_rerun_is_answered_past_the_tables_first_checkpoint(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str
) -> None:
    """The identity check before a source function reads the recorded txn versions from the checkpoint and
    the commits after it (over Connect from the checkpoint files: Spark hides ``_last_checkpoint``)."""
    spark.sql(
        f"CREATE TABLE delta.`{table_path}` ({ACCOUNTS}) USING delta "
        "TBLPROPERTIES ('delta.checkpointInterval' = '2')"
    )
    spark.createDataFrame([("a", 0)], ACCOUNTS).write.format("delta").mode("append").save(table_path)
    calls: list[str] = []

    def add(app: str) -> Callable[[SparkSession], DataFrame]:
        def build(spark: SparkSession) -> DataFrame:
            calls.append(app)
            return spark.createDataFrame([("a", len(calls))], ACCOUNTS)

        return build

    # v2 a/1 (in the checkpoint of v4), v3 c/1, v4 c/2 (checkpoint), v5 b/1 (after it, in its JSON commit)
    for app, version in (("a", 1), ("c", 1), ("c", 2), ("b", 1)):
        spec = {**_merge(table_path, add(app)), "txn": {"app_id": app, "version": version}}
        code, report = run_job(spec, spark)
        assert code == ExitCode.SUCCESS and report["status"] == "committed", report
    assert Path(table_path, "_delta_log", f"{4:020d}.checkpoint.parquet").exists()

    for app in ("a", "b"):
        spec = {**_merge(table_path, add("rerun")), "txn": {"app_id": app, "version": 1}}
        code, again = run_job(spec, new_session())
        assert code == ExitCode.SUCCESS and again["skipped_duplicate"], again
    assert "rerun" not in calls


def test_racing_read_modify_writes_take_turns_and_add_up_exactly(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str, tmp_path: Path
) -> None:
    """Four writers at once, each reading the balance eagerly and MERGEing it back plus its amount, guarded as
    an ``in_process`` (classic session) or ``spark_connect`` task guards its write: a write lease and a turn
    in the table's queue. Each calls its function after its turn, so none loses an attempt and none loses an
    update."""
    from airflow_provider_deltacc.contract.storage_safety import spark_storage_safety
    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.leases import SqliteLeaseStore
    from airflow_provider_deltacc.turns import WriteGuard, guarded_write

    _create(spark, table_path, [("a", 0)], ACCOUNTS)
    store = tmp_path / "leases.db"
    reports: dict[int, tuple[int, dict[str, Any]]] = {}
    barrier = threading.Barrier(4)

    def add(amount: int) -> Callable[[SparkSession], DataFrame]:
        def build(spark: SparkSession) -> DataFrame:
            row = spark.read.format("delta").load(table_path).collect()[0]
            return spark.createDataFrame([("a", row["balance"] + amount)], ACCOUNTS)

        return build

    def writer(amount: int) -> None:
        spec = {**_merge(table_path, add(amount)), "txn": {"app_id": f"w{amount}", "version": 1}}
        guard = WriteGuard(holder=f"test.w{amount}", ttl_s=60.0, turn_wait_timeout_s=300.0)
        session = new_session()
        barrier.wait()
        verdict = spark_storage_safety(Table(table_path), {})
        with guarded_write(
            parse_spec(spec), guard, verdict=verdict, open_store=lambda: SqliteLeaseStore(store)
        ) as write:
            reports[amount] = run_job(write.spec, session, turns=write.turns)

    threads = [threading.Thread(target=writer, args=(amount,)) for amount in (1, 10, 100, 1000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert sorted(reports) == [1, 10, 100, 1000]
    assert all(code == ExitCode.SUCCESS for code, _ in reports.values()), reports
    attempts = [len(report["attempts"]) for _, report in reports.values()]
    assert attempts == [1, 1, 1, 1], [report["summary"] for _, report in reports.values()]
    assert _rows(table_path, "account") == [{"account": "a", "balance": 1111}]
