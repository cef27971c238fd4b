"""Parsing job specs: valid shapes per operation and precise errors, without a JVM."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.contract.spec import (
    AppendOptions,
    MergeClause,
    MergeOptions,
    SqlOptions,
    VacuumOptions,
)
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.spark_job.main import run_job
from airflow_provider_deltacc.spark_job.report_line import format_report_line, parse_report_line

pytestmark = pytest.mark.unit

ROWS = {"kind": "rows", "rows": [[1]], "schema": "id INT"}
DELETE_ALL = {"operation": "delete", "table": "/t", "options": {"condition": "true"}}
STRUCT = json.dumps({"type": "struct", "fields": []})


def test_merge_spec_with_defaults_and_clauses() -> None:
    spec = parse_spec(
        json.dumps(
            {
                "operation": "merge",
                "table": "/data/orders",
                "source": {"kind": "delta", "path": "/data/staging", "version": 3},
                "options": {
                    "keys": ["id"],
                    "when_matched": [{"action": "delete", "condition": "s.deleted"}, {"action": "update"}],
                    "partition_pin": "auto",
                },
                "commit_retry": {"max_attempts": 3},
                "txn": {"app_id": "dag.task", "version": 20261120},
                "spark_conf": {"spark.sql.shuffle.partitions": 4, "spark.x.flag": True},
            }
        )
    )
    assert isinstance(spec.options, MergeOptions)
    assert spec.options.when_matched == (MergeClause("delete", "s.deleted"), MergeClause("update"))
    assert spec.options.when_not_matched == (MergeClause("insert"),)
    assert spec.options.partition_pin == "auto"
    assert spec.commit_retry.max_attempts == 3 and spec.txn is not None and spec.txn.version == 20261120
    assert spec.spark_conf == {"spark.sql.shuffle.partitions": "4", "spark.x.flag": "true"}
    assert spec.source is not None and spec.source.version == 3


def test_defaults_of_other_operations() -> None:
    append = parse_spec({"operation": "append", "table": "db.orders", "source": ROWS})
    assert append.options == AppendOptions()
    merge = parse_spec(
        {"operation": "merge", "table": "t", "source": ROWS, "options": {"condition": "t.a = s.a"}}
    )
    assert isinstance(merge.options, MergeOptions) and merge.options.partition_pin == "keyed"
    vacuum = parse_spec({"operation": "vacuum", "table": "/t", "options": None, "source": None})
    assert vacuum.options == VacuumOptions()
    sql = parse_spec(
        {
            "operation": "sql",
            "table": "/t",
            "options": {"statement": "OPTIMIZE {table}", "op_class": "maintenance"},
        }
    )
    assert isinstance(sql.options, SqlOptions) and sql.options.op_class is OperationClass.MAINTENANCE


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ([], "<spec>"),
        ("{not json", "<spec>"),
        ({"operation": "append"}, "table"),
        ({"operation": "append", "table": "no spaces allowed"}, "table"),
        ({"operation": "append", "table": "/t", "extra": 1}, "extra"),
        ({"operation": "append", "table": "/t"}, "source"),
        ({"operation": "delete", "table": "/t", "source": ROWS, "options": {"condition": "true"}}, "source"),
        ({"operation": "append", "table": "/t", "source": {"kind": "kafka"}}, "source.kind"),
        ({"operation": "append", "table": "/t", "source": {"kind": "rows", "rows": [[1]]}}, "source.schema"),
        (
            {"operation": "append", "table": "/t", "source": ROWS, "options": {"partition_by": "date"}},
            "options.partition_by",
        ),
        ({"operation": "merge", "table": "/t", "source": ROWS, "options": {}}, "options.keys"),
        (
            {
                "operation": "merge",
                "table": "/t",
                "source": ROWS,
                "options": {"keys": ["id"], "when_matched": [{"action": "insert"}]},
            },
            "options.when_matched[0].action",
        ),
        (
            {
                "operation": "merge",
                "table": "/t",
                "source": ROWS,
                "options": {"keys": ["id"], "when_matched": [{"action": "delete", "set": {"a": "1"}}]},
            },
            "options.when_matched[0].set",
        ),
        (
            {
                "operation": "merge",
                "table": "/t",
                "source": ROWS,
                "options": {"keys": ["id"], "partition_pin": "all"},
            },
            "options.partition_pin",
        ),
        (
            {
                "operation": "merge",
                "table": "/t",
                "source": ROWS,
                "options": {"keys": ["id"], "max_pin_values": 0},
            },
            "options.max_pin_values",
        ),
        ({"operation": "update", "table": "/t", "options": {"condition": "true"}}, "options.set"),
        ({"operation": "update", "table": "/t", "options": {"set": {"a": "1"}}}, "options.condition"),
        ({"operation": "delete", "table": "/t", "options": {"equals": {"a": [1]}}}, "options.equals.a"),
        (
            {"operation": "delete", "table": "/t", "options": {"partition_values": [{}]}},
            "options.partition_values[0]",
        ),
        (
            {"operation": "vacuum", "table": "/t", "options": {"retention_hours": -0.5}},
            "options.retention_hours",
        ),
        (
            {"operation": "vacuum", "table": "/t", "options": {"retention_hours": "1"}},
            "options.retention_hours",
        ),
        ({"operation": "optimize", "table": "/t", "txn": {"app_id": "a", "version": 1}}, "txn"),
        (
            {
                "operation": "append",
                "table": "/t",
                "source": ROWS,
                "options": {"partition_by": ["a"], "cluster_by": ["a"]},
            },
            "options.cluster_by",
        ),
        (
            {"operation": "optimize", "table": "/t", "options": {"full": True, "zorder_by": ["a"]}},
            "options.full",
        ),
        ({"operation": "sql", "table": "/t", "options": {}}, "options.statement"),
        (
            {"operation": "sql", "table": "/t", "options": {"statement": "x", "op_class": "write"}},
            "options.op_class",
        ),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "commit_retry": {"jitter": "some"},
            },
            "commit_retry.jitter",
        ),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "commit_retry": {"max_wait_s": 0.01, "min_wait_s": 1},
            },
            "commit_retry.max_wait_s",
        ),
        (
            {"operation": "delete", "table": "/t", "options": {"condition": "true"}, "commit_retry": 5},
            "commit_retry",
        ),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "commit_retry": {"max_attempts": 2},
                "retry_policy": {"max_attempts": 3},
            },
            "retry_policy",
        ),
        (
            {"operation": "delete", "table": "/t", "options": {"condition": "true"}, "txn": {"app_id": "a"}},
            "txn.version",
        ),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "txn": {"app_id": "a", "version": True},
            },
            "txn.version",
        ),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "txn": {"app_id": "a", "version": 1, "epoch": 2},
            },
            "txn.epoch",
        ),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "txn": {"app_id": "a", "version": 1, "unrecorded_at": 0},
            },
            "txn.unrecorded_at",  # the worker's sighting travels in known_snapshot
        ),
        (
            {**DELETE_ALL, "known_snapshot": {"version": -1, "schema": STRUCT}},
            "known_snapshot.version",
        ),
        ({**DELETE_ALL, "known_snapshot": {"schema": STRUCT}}, "known_snapshot.version"),
        ({**DELETE_ALL, "known_snapshot": {"version": 3, "schema": "id INT"}}, "known_snapshot.schema"),
        ({**DELETE_ALL, "known_snapshot": {"version": 3}}, "known_snapshot.schema"),
        (
            {**DELETE_ALL, "known_snapshot": {"version": 3, "schema": STRUCT, "partition_columns": "d"}},
            "known_snapshot.partition_columns",
        ),
        (
            {**DELETE_ALL, "known_snapshot": {"version": 3, "schema": STRUCT, "txn_unrecorded": "yes"}},
            "known_snapshot.txn_unrecorded",
        ),
        (
            {**DELETE_ALL, "known_snapshot": {"version": 3, "schema": STRUCT, "files": []}},
            "known_snapshot.files",
        ),
        ({**DELETE_ALL, "known_snapshot": [3]}, "known_snapshot"),
        (
            {
                "operation": "delete",
                "table": "/t",
                "options": {"condition": "true"},
                "spark_conf": {"k": None},
            },
            "spark_conf.k",
        ),
    ],
)
def test_invalid_specs_name_the_field(spec: Any, field: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(spec)
    assert info.value.field == field, str(info.value)
    assert str(info.value).startswith(f"{field}=")


@pytest.mark.parametrize("value", [{"max_attempts": 2}, None])
def test_retry_policy_is_refused_naming_commit_retry(value: Any) -> None:
    """``retry_policy`` was ``commit_retry``'s name before the rename; nothing was released under it."""
    spec = {"operation": "delete", "table": "/t", "options": {"condition": "true"}, "retry_policy": value}
    with pytest.raises(SpecError) as info:
        parse_spec(spec)
    assert (info.value.field, info.value.value) == ("retry_policy", value)
    assert str(info.value) == f"retry_policy={value!r}: is called commit_retry: name the field commit_retry"
    rest = {key: field for key, field in spec.items() if key != "retry_policy"}
    with pytest.raises(SpecError, match="valid fields are commit_retry, known_snapshot, operation"):
        parse_spec({**rest, "retry_polcy": {}})  # the old name is not offered as a valid field


def test_run_job_reports_bad_input_without_spark() -> None:
    code, report = run_job({"operation": "upsert", "table": "/t"})
    assert code == ExitCode.BAD_INPUT == 64
    assert report["status"] == "bad_input" and report["error"]["field"] == "operation"
    assert "append" in report["error"]["message"]


def test_report_line_round_trip() -> None:
    line = format_report_line({"status": "committed", "note": "a\nb"})
    assert "\n" not in line and line.startswith("DELTACC_REPORT {")
    assert parse_report_line(line + "\n") == {"status": "committed", "note": "a\nb"}
    assert parse_report_line("INFO something else") is None
