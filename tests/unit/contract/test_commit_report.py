"""CommitReport and AttemptRecord: JSON round trip, derived numbers, summary line."""

from __future__ import annotations

import json

import pytest

from airflow_provider_deltacc.contract.commit_report import AttemptRecord, CommitReport
from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind

pytestmark = pytest.mark.unit

APPEND = Conflict(
    kind=ConflictKind.APPEND,
    table="spark_catalog.default.orders",
    winning_version=40,
    winning_operation="WRITE",
    partition="[date=2026-11-20]",
    message="[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Transaction conflict detected.",
    exception_type="delta.exceptions.captured.ConcurrentAppendException",
)


def _report() -> CommitReport:
    return CommitReport(
        operation="MERGE",
        table="orders",
        status="committed",
        table_version=42,
        attempts=[
            AttemptRecord(
                1, 1_763_625_600.125, 1.0, "conflict", APPEND, "ConcurrentAppendException: x", 0.37, 1.0
            ),
            AttemptRecord(
                2, 1_763_625_601.5, 0.8, "conflict", APPEND, "ConcurrentAppendException: y", 0.91, 0.8
            ),
            AttemptRecord(3, 1_763_625_603.25, 1.1, "committed"),
        ],
        total_seconds=4.18,
        txn_app_id="deltacc:dag.task:orders",
        txn_version=20261120,
        metrics={"numTargetRowsUpdated": 10, "numTargetRowsInserted": 3, "nested": {"files": [1, 2]}},
    )


def test_summary_line() -> None:
    assert _report().summary_line() == (
        "MERGE on orders: committed v42 after 3 attempts, 2 conflicts (APPEND x2), 1.8 s wasted"
    )


def test_summary_line_single_attempt_and_mixed_conflicts() -> None:
    clean = CommitReport(
        "APPEND", "events", table_version=7, attempts=[AttemptRecord(1, 0.0, 0.2, "committed")]
    )
    assert (
        clean.summary_line() == "APPEND on events: committed v7 after 1 attempt, no conflicts, 0.0 s wasted"
    )

    read = Conflict(kind=ConflictKind.DELETE_READ)
    failed = CommitReport(
        "DELETE",
        "events",
        status="conflict_exhausted",
        attempts=[
            AttemptRecord(1, 0.0, 2.0, "conflict", APPEND, wasted_s=2.0),
            AttemptRecord(2, 3.0, 1.0, "conflict", read, wasted_s=1.0),
            AttemptRecord(3, 5.0, 1.5, "conflict", APPEND, wasted_s=1.5),
        ],
    )
    assert failed.summary_line() == (
        "DELETE on events: gave up on conflicts after 3 attempts, 3 conflicts (APPEND x2, DELETE_READ x1), "
        "4.5 s wasted"
    )


def test_summary_line_skipped_duplicate() -> None:
    report = CommitReport(
        "APPEND",
        "events",
        status="skipped_duplicate",
        table_version=9,
        skipped_duplicate=True,
        attempts=[AttemptRecord(1, 0.0, 0.1, "skipped_duplicate")],
    )
    assert "skipped as an already-committed duplicate v9" in report.summary_line()


def test_conflicts_and_wasted_seconds() -> None:
    report = _report()

    assert report.conflicts == [APPEND, APPEND]
    assert report.wasted_seconds == pytest.approx(1.8)


def test_dict_round_trip_is_exact() -> None:
    report = _report()
    assert CommitReport.from_dict(report.to_dict()) == report


def test_json_round_trip_is_exact() -> None:
    report = _report()
    text = report.to_json()

    assert "\n" not in text, "one line for the spark job's stdout"
    assert CommitReport.from_json(text) == report
    assert CommitReport.from_dict(json.loads(text)) == report
    assert json.loads(text)["attempts"][0]["conflict"]["kind"] == "append"


def test_round_trip_of_an_error_report() -> None:
    report = CommitReport(
        "OPTIMIZE",
        "orders",
        status="error",
        attempts=[AttemptRecord(1, 12.5, 3.25, "error", exception="ValueError: boom", wasted_s=3.25)],
        total_seconds=3.25,
    )
    assert CommitReport.from_json(report.to_json()) == report


def test_from_dict_ignores_unknown_keys() -> None:
    data = _report().to_dict()
    data["written_by"] = "a newer job"
    data["attempts"][0]["extra"] = True

    assert CommitReport.from_dict(data) == _report()
