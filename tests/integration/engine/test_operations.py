"""Every operation against a real Delta table, through ``run_job`` (the in-process job)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import contents, create_table, rows_source, version

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(5)]

BASE = [(1, "2026-11-20", "a"), (2, "2026-11-20", "b"), (3, "2026-11-21", "c")]


def _ok(spark: SparkSession, spec: dict[str, Any]) -> dict[str, Any]:
    code, report = run_job(spec, spark)
    assert code == ExitCode.SUCCESS, report
    assert report["status"] == "committed", report
    return report


def test_append_creates_partitioned_table_then_appends(spark: SparkSession, table_path: str) -> None:
    spec = {
        "operation": "append",
        "table": table_path,
        "source": rows_source([[1, "2026-11-20", "a"]]),
        "options": {"partition_by": ["date"]},
    }
    first = _ok(spark, spec)
    assert first["table_version"] == 0 and first["metrics"]["created_table"] is True
    spec["source"] = rows_source([[2, "2026-11-21", "b"]])
    second = _ok(spark, spec)
    assert second["table_version"] == 1 and second["metrics"]["numOutputRows"] == 1
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{table_path}`").collect()[0]
    assert detail["partitionColumns"] == ["date"]
    assert contents(spark, table_path) == [("1", "2026-11-20", "a"), ("2", "2026-11-21", "b")]


def test_overwrite_partitions_replaces_only_source_partitions(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    report = _ok(
        spark,
        {
            "operation": "overwrite_partitions",
            "table": table_path,
            "source": rows_source([[9, "2026-11-20", "z"]]),
        },
    )
    assert report["metrics"]["replace_where"] == "(`date` IN (DATE '2026-11-20'))"
    assert contents(spark, table_path) == [("3", "2026-11-21", "c"), ("9", "2026-11-20", "z")]


def test_overwrite_explicit_partition_with_empty_source_clears_it(
    spark: SparkSession, table_path: str
) -> None:
    create_table(spark, table_path, BASE)
    _ok(
        spark,
        {
            "operation": "overwrite_partitions",
            "table": table_path,
            "source": rows_source([]),
            "options": {"partition_values": [{"date": "2026-11-21"}]},
        },
    )
    assert contents(spark, table_path) == [("1", "2026-11-20", "a"), ("2", "2026-11-20", "b")]


def test_merge_upsert_with_dedup_and_pin(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    source = rows_source(
        [
            [1, "2026-11-20", "old", 1],
            [1, "2026-11-20", "new", 2],
            [4, "2026-11-20", "d", 1],
        ],
        "id INT, date DATE, value STRING, seq INT",
    )
    report = _ok(
        spark,
        {
            "operation": "merge",
            "table": table_path,
            "source": source,
            "options": {
                "keys": ["id", "date"],
                "dedup_order_by": "seq",
                "when_matched": [{"action": "update", "set": {"value": "s.value"}}],
                "when_not_matched": [
                    {"action": "insert", "values": {"id": "s.id", "date": "s.date", "value": "s.value"}}
                ],
            },
        },
    )
    assert report["metrics"]["partition_pin"] == "(`t`.`date` IN (DATE '2026-11-20'))"
    assert report["metrics"]["numTargetRowsUpdated"] == 1 and report["metrics"]["numTargetRowsInserted"] == 1
    assert contents(spark, table_path) == [
        ("1", "2026-11-20", "new"),
        ("2", "2026-11-20", "b"),
        ("3", "2026-11-21", "c"),
        ("4", "2026-11-20", "d"),
    ]


def test_merge_condition_with_delete_clause(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    _ok(
        spark,
        {
            "operation": "merge",
            "table": table_path,
            "source": rows_source([[2, "2026-11-20", "gone"], [5, "2026-11-21", "e"]]),
            "options": {
                "condition": "t.id = s.id",
                "partition_pin": "auto",
                "when_matched": [{"action": "delete", "condition": "s.value = 'gone'"}],
            },
        },
    )
    assert contents(spark, table_path) == [
        ("1", "2026-11-20", "a"),
        ("3", "2026-11-21", "c"),
        ("5", "2026-11-21", "e"),
    ]


def test_merge_expressions_with_braces_and_placeholder_text_are_sent_as_written(
    spark: SparkSession, table_path: str
) -> None:
    """The source travels with the MERGE statement as a formatted argument: braces in the user's expressions
    (a JSON string, a format pattern) and text that looks like a placeholder must reach Spark as written."""
    create_table(spark, table_path, BASE)
    _ok(
        spark,
        {
            "operation": "merge",
            "table": table_path,
            "source": rows_source([[1, "2026-11-20", "{source}"], [2, "2026-11-20", "b"]]),
            "options": {
                "keys": ["id"],
                "when_matched": [
                    {
                        "action": "update",
                        "condition": "s.value = '{source}' OR s.value = '{{x}}'",
                        "set": {"value": "concat('{\"v\": \"', s.value, '\"}')"},
                    }
                ],
            },
        },
    )
    assert contents(spark, table_path) == [
        ("1", "2026-11-20", '{"v": "{source}"}'),
        ("2", "2026-11-20", "b"),
        ("3", "2026-11-21", "c"),
    ]


@pytest.mark.parametrize("pin", ["auto", None])
def test_merge_with_empty_source_commits_nothing(
    spark: SparkSession, table_path: str, pin: str | None
) -> None:
    """An empty source writes nothing and records no identity, so a re-run once the source has rows (an
    upstream task cleared and run again) still merges them; unpinned too, where Delta would commit the
    identity alone."""
    create_table(spark, table_path, BASE)
    before = version(spark, table_path)
    report = _ok(
        spark,
        {
            "operation": "merge",
            "table": table_path,
            "source": rows_source([]),
            "options": {"keys": ["id"], "partition_pin": pin},
            "txn": {"app_id": "empty-merge", "version": 1},
        },
    )
    assert report["metrics"]["noop"] is True and "empty" in report["metrics"]["noop_reason"]
    assert report["table_version"] == before == version(spark, table_path)
    assert not report["skipped_duplicate"]


@pytest.mark.connect_session  # a classic session finds its commit in the JVM's DeltaLog
@pytest.mark.parametrize("disk", ["shared", "missing", "another"])
def test_a_write_finds_its_commit_whatever_this_machine_sees_of_the_table(
    spark: SparkSession, table_path: str, disk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over Connect the attempt's commit is read from this machine's disk when the table is there, else by the
    server: here the worker shares the server's disk, or sees no such file, or another file of that name (a
    path that means another disk on the worker's machine)."""
    import airflow_provider_deltacc.engine.backend_connect as backend_connect

    other = '{"commitInfo":{"operation":"WRITE","userMetadata":"another-tag","operationMetrics":{}}}'
    if disk != "shared":
        monkeypatch.setattr(
            backend_connect, "_local_commit_lines", lambda *_: [] if disk == "missing" else [other]
        )
    create_table(spark, table_path, BASE)
    report = _ok(
        spark,
        {
            "operation": "merge",
            "table": table_path,
            "source": rows_source([[1, "2026-11-20", "z"], [7, "2026-11-21", "g"]]),
            "options": {"keys": ["id"]},
        },
    )
    assert report["metrics"]["commit_versions"] == [version(spark, table_path)]
    assert report["metrics"]["numTargetRowsUpdated"] == 1 and report["metrics"]["numTargetRowsInserted"] == 1


def test_update_with_literal_values_and_partition(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    report = _ok(
        spark,
        {
            "operation": "update",
            "table": table_path,
            "options": {
                "set": {"id": "id + 100"},
                "set_values": {"value": "it's \\ done"},
                "equals": {"value": "a"},
                "partition_values": [{"date": "2026-11-20"}],
            },
        },
    )
    assert report["metrics"]["numUpdatedRows"] == 1
    assert ("101", "2026-11-20", "it's \\ done") in contents(spark, table_path)


def test_delete_by_condition_and_sql_statement(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    report = _ok(spark, {"operation": "delete", "table": table_path, "options": {"condition": "id = 3"}})
    assert report["metrics"]["numDeletedRows"] == 1
    sql = _ok(
        spark,
        {
            "operation": "sql",
            "table": table_path,
            "options": {"statement": "DELETE FROM {table} WHERE id = 1"},
        },
    )
    assert sql["metrics"]["result"] == {"num_affected_rows": 1}
    assert contents(spark, table_path) == [("2", "2026-11-20", "b")]


def test_delete_matching_nothing_reports_noop(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    report = _ok(spark, {"operation": "delete", "table": table_path, "options": {"equals": {"id": 42}}})
    assert report["metrics"]["noop"] is True and report["table_version"] == version(spark, table_path)


def test_optimize_compacts_one_partition_and_zorders(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    for row in ([7, "2026-11-20", "x"], [8, "2026-11-20", "y"]):
        _ok(spark, {"operation": "append", "table": table_path, "source": rows_source([row])})
    report = _ok(
        spark,
        {
            "operation": "optimize",
            "table": table_path,
            "options": {"partition_values": [{"date": "2026-11-20"}]},
        },
    )
    assert report["metrics"]["where"] == "(`date` IN (DATE '2026-11-20'))"
    assert report["metrics"]["num_files_removed"] == 3 and report["metrics"]["num_files_added"] == 1
    zorder = _ok(spark, {"operation": "optimize", "table": table_path, "options": {"zorder_by": ["id"]}})
    assert zorder["table_version"] >= report["table_version"]
    assert len(contents(spark, table_path)) == 5


def test_vacuum_honours_requested_retention_despite_retention_window_ignore(
    spark: SparkSession, table_path: str
) -> None:
    create_table(spark, table_path, BASE)
    spark.sql(
        f"ALTER TABLE delta.`{table_path}` "
        "SET TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 0 hours')"
    )
    _ok(spark, {"operation": "delete", "table": table_path, "options": {"condition": "true"}})
    data_files = lambda: sorted(p.name for p in Path(table_path).rglob("*.parquet"))  # noqa: E731
    before = data_files()
    keep = _ok(spark, {"operation": "vacuum", "table": table_path, "options": {"retention_hours": 1000}})
    assert keep["metrics"]["retention_window_ignore_detected"] is True
    assert keep["metrics"]["requested_retention_honored"] is True and keep["metrics"]["warnings"]
    assert data_files() == before, "a 1000 h retention must keep the just-removed files"
    dry = _ok(spark, {"operation": "vacuum", "table": table_path, "options": {"dry_run": True}})
    assert dry["metrics"]["files_to_delete"] == len(before) and dry["metrics"]["noop"] is True
    _ok(spark, {"operation": "vacuum", "table": table_path})
    assert data_files() == []


def test_vacuum_below_table_retention_needs_force(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, BASE)
    code, report = run_job(
        {"operation": "vacuum", "table": table_path, "options": {"retention_hours": 1}}, spark
    )
    assert code == ExitCode.BAD_INPUT and report["error"]["field"] == "options.retention_hours"
    assert "force" in report["error"]["message"]
    forced = _ok(
        spark, {"operation": "vacuum", "table": table_path, "options": {"retention_hours": 0, "force": True}}
    )
    assert any("forced" in w for w in forced["metrics"]["warnings"])
