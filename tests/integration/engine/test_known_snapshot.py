"""A write's first attempt plans from the snapshot the worker's read of the Delta log showed (the spec's
``known_snapshot``), on real Delta, on a classic and a Spark Connect session: no Spark read of the table's
state before it commits, nor a load of the table to analyse MERGE's, UPDATE's and DELETE's expressions; and a
snapshot gone stale (a column another writer added since) never fails a job that fits the table as it is
now, while bad input still fails naming its field with nothing written.

The snapshot comes from the worker's own read (``consult_log``), and the job gets its JSON form, as a
spark-submit driver does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.source_function import SourceFunction
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.spec_json import spec_to_json
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log.fast_path import consult_log
from airflow_provider_deltacc.engine.backend_connect import ConnectBackend
from airflow_provider_deltacc.engine.backend_jvm import JvmBackend
from airflow_provider_deltacc.spark_job.main import run_job

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(1)]

SCHEMA = "id BIGINT, day STRING, amount BIGINT"


def _version(path: str) -> int:
    from deltalake import DeltaTable

    return DeltaTable(path).version()


def _rows(path: str) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda row: row["id"])


@pytest.fixture
def state_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every read of a table's state on Spark (either backend), and every load of the table for analysing
    expressions against it (MERGE's, UPDATE's and DELETE's checks), by table."""
    from airflow_provider_deltacc.engine import table as engine_table

    reads: list[str] = []
    for backend in (JvmBackend, ConnectBackend):
        real = backend.state_if_exists

        def counting(self: Any, table: Any, app_ids: tuple[str, ...], _real: Any = real) -> Any:
            reads.append(table.name)
            return _real(self, table, app_ids)

        monkeypatch.setattr(backend, "state_if_exists", counting)
    real_frame = engine_table.table_frame

    def loading(spark: Any, table: Any) -> Any:
        reads.append(table.name)
        return real_frame(spark, table)

    monkeypatch.setattr(engine_table, "table_frame", loading)
    yield reads


def _known(spec: dict[str, Any]) -> JobSpec:
    """The spec as the worker hands it to the job: with the snapshot its read of the log showed."""
    job = parse_spec(spec)
    answer = consult_log(job)
    assert answer.report is None and answer.known_snapshot is not None
    return answer.spec_to_run(job)


def _with_known_snapshot(spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`_known`, in the JSON form a spark-submit driver reads."""
    return spec_to_json(_known(spec))


def _create(spark: SparkSession, path: str) -> None:
    rows = [(1, "2026-11-01", 10), (2, "2026-11-02", 20)]
    spark.createDataFrame(rows, SCHEMA).write.format("delta").partitionBy("day").save(path)


def test_a_write_plans_its_first_attempt_from_the_snapshot_the_worker_read(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str, state_reads: list[str]
) -> None:
    _create(spark, table_path)
    append = {
        "operation": "append",
        "table": table_path,
        "source": {"kind": "rows", "rows": [[3, "2026-11-03", 30]], "schema": SCHEMA},
        "txn": {"app_id": "known/append", "version": 1},
    }
    merge = {
        "operation": "merge",
        "table": table_path,
        "source": {"kind": "rows", "rows": [[1, "2026-11-01", 11]], "schema": SCHEMA},
        "options": {"keys": ["id", "day"]},
        "txn": {"app_id": "known/merge", "version": 1},
    }
    update = {
        "operation": "update",
        "table": table_path,
        "options": {"condition": "amount >= 20", "set": {"amount": "amount + 1"}},
        "txn": {"app_id": "known/update", "version": 1},
    }
    delete = {
        "operation": "delete",
        "table": table_path,
        "options": {"condition": "amount = 31"},
        "txn": {"app_id": "known/delete", "version": 1},
    }
    for spec in (append, merge, update, delete):
        code, report = run_job(_with_known_snapshot(spec), new_session())
        assert code == ExitCode.SUCCESS and report["status"] == "committed", report
    assert state_reads == []
    assert _rows(table_path) == [
        {"id": 1, "day": "2026-11-01", "amount": 11},
        {"id": 2, "day": "2026-11-02", "amount": 21},
    ]
    # The same MERGE pinned to its partition, without the snapshot: Spark reads the state itself.
    again = {**merge, "txn": {"app_id": "known/merge", "version": 2}, "options": {"keys": ["id", "day"]}}
    code, report = run_job(again, new_session())
    assert code == ExitCode.SUCCESS and report["metrics"]["partition_pin"], report
    assert state_reads and set(state_reads) == {table_path}


def test_a_stale_snapshot_is_checked_again_on_sparks_read_and_bad_input_still_fails(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str
) -> None:
    _create(spark, table_path)
    with_region = "id BIGINT, day STRING, amount BIGINT, region STRING"
    declarative = {
        "operation": "append",
        "table": table_path,
        "source": {"kind": "rows", "rows": [[4, "2026-11-04", 40, "eu"]], "schema": with_region},
    }

    def eu_rows(spark: SparkSession) -> DataFrame:
        return spark.createDataFrame([(5, "2026-11-05", 50, "eu")], with_region)

    function = {**declarative, "source": {"kind": "callable", "function": SourceFunction(eu_rows)}}
    delete = {"operation": "delete", "table": table_path, "options": {"equals": {"region": "us"}}}
    update = {
        "operation": "update",
        "table": table_path,
        "options": {"condition": "region = 'eu'", "set": {"amount": "amount * 2"}},
    }
    bad = {**declarative, "source": {**declarative["source"], "schema": f"{with_region}, nope INT"}}
    bad["source"]["rows"] = [[6, "2026-11-06", 60, "eu", 1]]
    stale: dict[str, Any] = {
        "rows": _with_known_snapshot(declarative),
        "function": _known(function),  # a function that never travelled runs in this process
        "delete": _with_known_snapshot(delete),
        "update": _with_known_snapshot(update),
        "bad": _with_known_snapshot(bad),
    }

    # Another writer adds `region` after the worker's read.
    spark.createDataFrame([(3, "2026-11-03", 30, "us")], with_region).write.format("delta").mode(
        "append"
    ).option("mergeSchema", "true").save(table_path)

    for name in ("rows", "function", "delete", "update"):
        code, report = run_job(stale[name], new_session())
        assert code == ExitCode.SUCCESS and report["status"] == "committed", (name, report)
    assert [(row["id"], row["region"], row["amount"]) for row in _rows(table_path)] == [
        (1, None, 10),
        (2, None, 20),
        (4, "eu", 80),
        (5, "eu", 100),
    ]
    before = _version(table_path)
    code, report = run_job(stale["bad"], new_session())
    assert code == ExitCode.BAD_INPUT and report["error"]["field"] == "source", report
    assert "nope" in report["error"]["message"]
    assert _version(table_path) == before
