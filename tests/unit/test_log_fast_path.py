"""The Delta-log fast path's decisions, on tables written with delta-rs and on snapshots built by hand:
when the log answers (a committed duplicate, an empty create of an existing table), what it reports, and every
case where it must leave the job to Spark."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pytest

from airflow_provider_deltacc.contract.commits import TXN_SCAN_VERSIONS, scan_for_txn_commit
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log.fast_path import (
    ANSWERED_BY,
    LogAnswer,
    LogColumn,
    LogSnapshot,
    fast_path_verdict,
)
from airflow_provider_deltacc.delta_log.fast_path import consult_log as consult_typed

pytestmark = pytest.mark.unit

SCHEMA = "id BIGINT, day STRING, amount DECIMAL(10,2)"
ARROW = pa.schema([("id", pa.int64()), ("day", pa.string()), ("amount", pa.decimal128(10, 2))])


def _write(path: Path, *, txn: tuple[str, int] | None = None, **kwargs: Any) -> None:
    from deltalake import CommitProperties, Transaction, write_deltalake

    rows = pa.table({"id": [1], "day": ["2026-11-20"], "amount": [None]}, schema=ARROW)
    properties = (
        CommitProperties(app_transactions=[Transaction(app_id=txn[0], version=txn[1])]) if txn else None
    )
    mode: Literal["append", "error"] = "append" if (path / "_delta_log").exists() else "error"
    write_deltalake(str(path), rows, mode=mode, partition_by=["day"], commit_properties=properties, **kwargs)


def log_report(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The report the log gives for a spec written as a dict (the fast path takes the typed spec)."""
    return consult_typed(parse_spec(spec)).report


def consult_log(spec: dict[str, Any]) -> LogAnswer:
    """What the log tells a spec written as a dict (the fast path takes the typed spec)."""
    return consult_typed(parse_spec(spec))


def _merge(table: str, version: int, app_id: str = "dag.merge") -> dict[str, Any]:
    return {
        "operation": "merge",
        "table": table,
        "source": {"kind": "rows", "rows": [[1, "2026-11-20", "1.50"]], "schema": SCHEMA},
        "options": {"keys": ["id", "day"]},
        "txn": {"app_id": app_id, "version": version},
    }


def _create(table: str, schema: str = SCHEMA, **options: Any) -> dict[str, Any]:
    return {
        "operation": "append",
        "table": table,
        "source": {"kind": "rows", "rows": [], "schema": schema},
        "options": {"create_if_missing": True, **options},
        "txn": {"app_id": f"deltacc/create-if-missing/{table}", "version": 1},
    }


@pytest.fixture
def table(tmp_path: Path) -> str:
    """v0 plain, v1 records ``dag.merge`` version 4, v2 plain."""
    path = tmp_path / "orders"
    _write(path)
    _write(path, txn=("dag.merge", 4))
    _write(path)
    return str(path)


# -- committed duplicates ------------------------------------------------------------------------------
@pytest.mark.parametrize(("ours", "answered"), [(5, False), (4, True), (3, True)])
def test_a_write_is_answered_exactly_when_delta_would_skip_it(table: str, ours: int, answered: bool) -> None:
    report = log_report(_merge(table, ours))
    assert (report is not None) is answered
    if report is None:
        return
    assert report["status"] == "skipped_duplicate" and report["skipped_duplicate"] is True
    assert report["operation"] == "MERGE" and report["table"] == table and report["table_version"] == 2
    assert (report["txn_app_id"], report["txn_version"]) == ("dag.merge", ours)
    assert [a["outcome"] for a in report["attempts"]] == ["skipped_duplicate"]
    metrics = report["metrics"]
    assert metrics["answered_by"] == ANSWERED_BY and metrics["recorded_txn_version"] == 4
    assert metrics["skip_reason"].startswith(f"txn 'dag.merge' version {ours} is already committed")
    # The commit that recorded this exact identity: v1 for version 4; version 3 was never committed itself.
    assert metrics["committed_version"] == (1 if ours == 4 else None)
    assert "skipped as an already-committed duplicate v2" in report["summary"]


def test_another_app_id_is_not_a_duplicate(table: str) -> None:
    assert log_report(_merge(table, 1, app_id="dag.other")) is None


# -- what the log tells a job it does not answer ------------------------------------------------------------
def test_a_write_the_log_does_not_answer_is_handed_the_snapshot_it_showed(table: str) -> None:
    spec = _merge(table, 5)
    answer = consult_log(spec)
    known = answer.known_snapshot
    assert answer.report is None and known is not None
    assert (known.version, known.partition_columns) == (2, ("day",))
    assert known.txn_unrecorded is True
    fields = json.loads(known.schema)["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [
        ("id", "long"),
        ("day", "string"),
        ("amount", "decimal(10,2)"),
    ]
    typed = parse_spec(spec)
    assert answer.spec_to_run(typed) == replace(typed, known_snapshot=known)
    assert typed.known_snapshot is None  # the caller's spec is left as it was


@pytest.mark.parametrize(
    "spec",
    [
        {"operation": "delete", "options": {"condition": "id = 1"}},
        {"operation": "update", "options": {"set": {"amount": "0"}, "condition": "id = 1"}},
        {
            "operation": "append",
            "source": {"kind": "rows", "rows": [[2, "2026-11-21", "1.00"]], "schema": SCHEMA},
        },
    ],
    ids=["delete", "update", "append"],
)
def test_a_write_without_an_identity_is_handed_the_snapshot_too(table: str, spec: dict[str, Any]) -> None:
    answer = consult_log({**spec, "table": table})
    assert answer.report is None and answer.known_snapshot is not None
    assert (answer.known_snapshot.version, answer.known_snapshot.txn_unrecorded) == (2, False)


@pytest.mark.parametrize(
    "spec",
    [
        {"operation": "optimize", "options": {}},
        {"operation": "vacuum", "options": {"retention_hours": 200}},
        {"operation": "sql", "options": {"statement": "DELETE FROM {table} WHERE id = 1"}},
    ],
    ids=["optimize", "vacuum", "sql"],
)
def test_maintenance_and_sql_read_their_own_snapshot_on_spark(table: str, spec: dict[str, Any]) -> None:
    """VACUUM's retention must be the table's when it runs; OPTIMIZE and SQL plan from no snapshot here."""
    assert consult_log({**spec, "table": table}) == LogAnswer()


def test_a_duplicate_is_answered_and_not_told_anything(table: str) -> None:
    answer = consult_log(_merge(table, 4))
    assert answer.report is not None and answer.known_snapshot is None


def test_an_identity_on_a_log_delta_rs_does_not_replay_is_not_told_unrecorded(
    monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    import airflow_provider_deltacc.delta_log.fast_path as fast_path

    real = fast_path.read_snapshot
    monkeypatch.setattr(
        fast_path,
        "read_snapshot",
        lambda *a, **k: replace(
            real(*a, **k), min_reader_version=3, reader_features=frozenset({"v2Checkpoint"})
        ),
    )
    spec = _merge(table, 5)
    assert consult_log(spec) == LogAnswer()
    assert LogAnswer().spec_to_run(parse_spec(spec)) == parse_spec(spec)


def test_a_txn_retention_still_tells_an_unrecorded_identity(tmp_path: Path) -> None:
    # Delta's retention drops entries delta-rs still shows: what delta-rs shows unrecorded, Delta does too.
    path = tmp_path / "retained"
    _write(path, configuration={"delta.setTransactionRetentionDuration": "interval 30 days"})
    known = consult_log(_merge(str(path), 4)).known_snapshot
    assert known is not None and (known.version, known.txn_unrecorded) == (0, True)


def test_a_job_the_log_cannot_read_is_told_nothing(tmp_path: Path) -> None:
    assert consult_log(_merge(str(tmp_path / "nothing_here"), 4)) == LogAnswer()
    assert consult_log({**_merge(str(tmp_path), 4), "table": "db.orders"}) == LogAnswer()


def test_a_superseded_identity_names_its_own_commit(table: str) -> None:
    _write(Path(table), txn=("dag.merge", 9))  # v3
    report = log_report(_merge(table, 4))
    assert report is not None
    assert report["metrics"]["recorded_txn_version"] == 9 and report["metrics"]["committed_version"] == 1


def test_the_commit_is_unknown_once_its_file_is_cleaned_up(table: str) -> None:
    from deltalake import DeltaTable

    DeltaTable(table).create_checkpoint()
    for version in (0, 1):
        os.remove(Path(table, "_delta_log", f"{version:020d}.json"))
    report = log_report(_merge(table, 4))
    assert report is not None and report["status"] == "skipped_duplicate"
    assert report["metrics"]["recorded_txn_version"] == 4 and report["metrics"]["committed_version"] is None


def test_a_file_uri_is_read_like_its_path(table: str) -> None:
    report = log_report(_merge(f"file://{table}", 4))
    assert report is not None and report["metrics"]["committed_version"] == 1


def test_the_scan_for_the_commit_stops_at_a_missing_file_and_its_bound() -> None:
    commit = '{"txn":{"appId":"a","version":7,"lastUpdated":1}}'
    files = {5: "{}", 4: commit, 3: "{}", 1: commit}
    read: list[int] = []

    def read_commit(version: int) -> str | None:
        read.append(version)
        return files.get(version)

    assert scan_for_txn_commit(read_commit, "a", 7, 5) == 4 and read == [5, 4]
    read.clear()
    assert scan_for_txn_commit(read_commit, "a", 7, 3) is None and read == [3, 2]  # v2 is gone: stop
    read.clear()
    assert scan_for_txn_commit(read_commit, "a", 7, 5, max_versions=1) is None and read == [5]
    assert TXN_SCAN_VERSIONS >= 100


# -- what falls through to Spark -------------------------------------------------------------------------
def test_a_catalog_table_falls_through() -> None:
    assert log_report(_merge("sales.orders", 4)) is None


def test_a_relative_path_falls_through(table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(table).parent)
    assert log_report(_merge("./orders", 4)) is None
    assert log_report(_merge(table, 4)) is not None


def test_a_scheme_less_path_on_another_default_file_system_falls_through(table: str) -> None:
    spec = {**_merge(table, 4), "spark_conf": {"spark.hadoop.fs.defaultFS": "hdfs://namenode:8020"}}
    assert log_report(spec) is None
    local = {**spec, "spark_conf": {"spark.hadoop.fs.defaultFS": "file:///"}}
    assert log_report(local) is not None


def test_s3_without_a_storage_guard_falls_through_where_the_job_would_refuse_it() -> None:
    spec = _merge("s3a://lake/orders", 4)
    from airflow_provider_deltacc.delta_log.fast_path import log_may_answer

    # A Spark the provider starts has the put-if-absent log store: the job would accept the table.
    assert log_may_answer(parse_spec(spec))
    single = {"spark.delta.logStore.s3a.impl": "io.delta.storage.S3SingleDriverLogStore"}
    spec = {**spec, "spark_conf": single}
    assert not log_may_answer(parse_spec(spec))
    assert log_may_answer(parse_spec({**spec, "storage_guard": "exclusive_lease"}))
    dynamo = {"spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore"}
    assert log_may_answer(parse_spec({**spec, "spark_conf": dynamo}))


def test_a_path_that_is_not_a_delta_table_falls_through(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "part-0.parquet").write_bytes(b"PAR1")
    assert log_report(_merge(str(tmp_path / "plain"), 4)) is None
    assert log_report(_merge(str(tmp_path / "nothing_here"), 4)) is None


def test_a_txn_retention_on_the_table_falls_through(tmp_path: Path) -> None:
    path = tmp_path / "retained"
    _write(
        path,
        txn=("dag.merge", 4),
        configuration={"delta.setTransactionRetentionDuration": "interval 30 days"},
    )
    assert log_report(_merge(str(path), 4)) is None


@pytest.mark.parametrize(
    "spec",
    [
        {"operation": "optimize", "table": "/t", "options": {}},
        {"operation": "vacuum", "table": "/t", "options": {}},
        {"operation": "delete", "table": "/t", "options": {"condition": "true"}},  # no txn identity
        {
            "operation": "merge",
            "table": "/t",
            "options": {"keys": ["id"]},
            "txn": {"app_id": "a", "version": 1},
        },
        {"operation": "no_such_operation", "table": "/t"},
    ],
    ids=["optimize", "vacuum", "no-txn", "bad-spec", "unknown-operation"],
)
def test_jobs_without_an_identity_or_a_valid_spec_fall_through(spec: dict[str, Any], tmp_path: Path) -> None:
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

    path = tmp_path / "t"
    _write(path, txn=("a", 1))
    # A dict enters at the hook: one that is not a valid spec is not answered (the run says what is wrong).
    assert DeltaCCHook(execution_mode="in_process").consult_log({**spec, "table": str(path)}).report is None


def _snapshot(**overrides: Any) -> LogSnapshot:
    values: dict[str, Any] = {
        "version": 7,
        "min_reader_version": 1,
        "reader_features": frozenset(),
        "configuration": {},
        "partition_columns": ("day",),
        "columns": (
            LogColumn("id", "long", True),
            LogColumn("day", "string", True),
            LogColumn("amount", "decimal(10,2)", True),
        ),
        "recorded_txn_version": 4,
    }
    return LogSnapshot(**{**values, **overrides})


@pytest.mark.parametrize(
    ("reader_version", "features", "answered"),
    [
        (1, (), True),
        (2, (), True),
        (3, ("columnMapping", "deletionVectors", "timestampNtz"), True),
        (3, ("deletionVectors", "v2Checkpoint"), False),
        (3, ("catalogManaged",), False),
        (3, ("someFutureFeature",), False),
        (4, (), False),
    ],
)
def test_only_logs_delta_rs_replays_as_delta_does_are_answered(
    reader_version: int, features: tuple[str, ...], answered: bool
) -> None:
    snapshot = _snapshot(min_reader_version=reader_version, reader_features=frozenset(features))
    verdict = fast_path_verdict(parse_spec(_merge("/t", 4)), snapshot)
    assert verdict == ("duplicate" if answered else None)


def test_the_retention_property_is_matched_in_any_case() -> None:
    snapshot = _snapshot(configuration={"DELTA.setTransactionRetentionDuration": "interval 1 days"})
    assert fast_path_verdict(parse_spec(_merge("/t", 4)), snapshot) is None


# -- an empty create of an existing table ----------------------------------------------------------------
def test_an_empty_create_of_an_existing_table_is_a_noop(tmp_path: Path) -> None:
    path = tmp_path / "target"
    _write(path)
    report = log_report(_create(str(path), partition_by=["DAY"]))
    assert report is not None
    assert report["status"] == "committed" and report["skipped_duplicate"] is False
    assert report["operation"] == "APPEND" and report["table_version"] == 0
    assert report["metrics"] == {
        "created_table": False,
        "noop": True,
        "noop_reason": "the table already exists and the append has no rows: nothing to create or write",
        "answered_by": ANSWERED_BY,
    }
    # Once its identity is recorded (the engine's empty create commits it), the re-run is a duplicate.
    _write(path, txn=(f"deltacc/create-if-missing/{path}", 1))
    again = log_report(_create(str(path)))
    assert again is not None and again["status"] == "skipped_duplicate"


def test_an_empty_create_of_a_missing_table_runs(tmp_path: Path) -> None:
    assert log_report(_create(str(tmp_path / "new"))) is None


@pytest.mark.parametrize(
    ("schema", "options"),
    [
        (SCHEMA, {"partition_by": ["id"]}),
        (SCHEMA, {"partition_by": ["day", "id"]}),
        (SCHEMA, {"merge_schema": True}),
        (SCHEMA, {"cluster_by": ["id"]}),  # the table's clustering columns are Spark's to check
        ("id INT, day STRING", {}),  # INT into BIGINT: Delta refuses it
        ("id BIGINT, day STRING, extra STRING", {}),
        ("ID BIGINT, day STRING", {}),  # another spelling: left to Spark's resolution
        ("id BIGINT, day STRING, amount DECIMAL(12,2)", {}),
        ("id BIGINT, day STRING, tags ARRAY<STRING>", {}),  # not comparable without Spark
        ("id BIGINT, day VARCHAR(10)", {}),
        ("id BIGINT, id BIGINT", {}),
        ("id BIGINT,, day STRING", {}),
    ],
)
def test_an_empty_create_the_engine_would_refuse_falls_through(
    tmp_path: Path, schema: str, options: dict[str, Any]
) -> None:
    path = tmp_path / "target"
    _write(path)
    assert log_report(_create(str(path), schema, **options)) is None


def test_an_empty_create_with_a_timestamp_type_setting_falls_through(tmp_path: Path) -> None:
    path = tmp_path / "target"
    _write(path)
    spec = {**_create(str(path)), "spark_conf": {"spark.sql.timestampType": "TIMESTAMP_NTZ"}}
    assert log_report(spec) is None


@pytest.mark.parametrize(
    ("columns", "schema", "answered"),
    [
        ((LogColumn("id", "long", False),), "id BIGINT NOT NULL", True),
        ((LogColumn("id", "long", True),), "id BIGINT NOT NULL", True),
        ((LogColumn("id", "long", False),), "id BIGINT", False),  # nullable rows into a NOT NULL column
        ((LogColumn("id", "long", True), LogColumn("ok", "string", False)), "id BIGINT", False),
        ((LogColumn("id", "long", True), LogColumn("note", "string", True)), "id BIGINT", True),
        ((LogColumn("id", "long", True, frozenset({"delta.identity.start"})),), "id BIGINT", False),
        ((LogColumn("s", "string", True, frozenset({"__CHAR_VARCHAR_TYPE_STRING"})),), "s STRING", False),
        ((LogColumn("t", "timestamp", True),), "t TIMESTAMP", True),
        ((LogColumn("t", "timestamp_ntz", True),), "t TIMESTAMP", False),
    ],
)
def test_an_empty_create_checks_nullability_and_write_checks(
    columns: tuple[LogColumn, ...], schema: str, answered: bool
) -> None:
    snapshot = _snapshot(columns=columns, partition_columns=(), recorded_txn_version=-1)
    assert fast_path_verdict(parse_spec(_create("/t", schema)), snapshot) == (
        "table_exists" if answered else None
    )


def test_an_append_with_rows_is_never_a_noop(tmp_path: Path) -> None:
    path = tmp_path / "target"
    _write(path)
    spec = _create(str(path))
    spec["source"]["rows"] = [[2, "2026-11-21", "1.00"]]
    assert log_report(spec) is None
