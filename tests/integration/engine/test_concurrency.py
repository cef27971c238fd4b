"""Four partition-disjoint MERGEs at once: with pinning none conflicts; without, conflicts are retried away.

One writer is held at a Gate after its snapshot read until the other three have committed, so the
interleaving that matters happens every run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.commit_report import CommitReport
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.engine.run import run_operation
from tests.integration.engine.helpers import contents, create_table, rows_source
from tests.support.gate import Gate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

WRITERS = 4
DATES = [f"2026-11-{day:02d}" for day in range(20, 20 + WRITERS)]


def _spec(table: str, index: int, pin: Any) -> JobSpec:
    return parse_spec(
        {
            "operation": "merge",
            "table": table,
            "source": rows_source([[index, DATES[index], f"new{index}"], [100 + index, DATES[index], "ins"]]),
            "options": {"keys": ["id"], "partition_pin": pin},
            "commit_retry": {"max_attempts": 12, "min_wait_s": 0.05, "max_wait_s": 0.5},
        }
    )


def _run_all(
    spark: SparkSession, new_session: Callable[[], SparkSession], table: str, tmp_path: Path, pin: Any
) -> list[CommitReport]:
    gate = Gate(tmp_path)
    reports: dict[int, CommitReport] = {}
    errors: dict[int, BaseException] = {}

    def hold_first_attempt(frame: DataFrame, attempt: int) -> DataFrame:
        return gate.hold(frame.coalesce(1), "id") if attempt == 1 else frame

    def run(index: int) -> None:
        try:
            hook = hold_first_attempt if index == 0 else None
            reports[index] = run_operation(new_session(), _spec(table, index, pin), source_hook=hook)
        except BaseException as exc:  # reported by the assertion below
            errors[index] = exc

    held = threading.Thread(target=run, args=(0,))
    held.start()
    gate.wait_entered()
    others = [threading.Thread(target=run, args=(i,)) for i in range(1, WRITERS)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join(timeout=300)
    gate.release()
    held.join(timeout=300)
    assert not errors, errors
    assert len(reports) == WRITERS
    expected = sorted(
        [(str(i), DATES[i], f"new{i}") for i in range(WRITERS)]
        + [(str(100 + i), DATES[i], "ins") for i in range(WRITERS)],
        key=str,
    )
    assert contents(spark, table) == expected
    return [reports[i] for i in range(WRITERS)]


def _seed(spark: SparkSession, path: str) -> None:
    create_table(spark, path, [(i, DATES[i], f"old{i}") for i in range(WRITERS)])


def test_pinned_disjoint_merges_never_conflict(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str, tmp_path: Path
) -> None:
    _seed(spark, table_path)
    reports = _run_all(spark, new_session, table_path, tmp_path, "auto")
    assert all(r.status == "committed" for r in reports)
    assert [len(r.conflicts) for r in reports] == [0] * WRITERS, [r.summary_line() for r in reports]
    assert "`t`.`date` IN (DATE '2026-11-20')" in reports[0].metrics["partition_pin"]


def test_unpinned_merges_conflict_and_retry_to_success(
    spark: SparkSession, new_session: Callable[[], SparkSession], table_path: str, tmp_path: Path
) -> None:
    _seed(spark, table_path)
    reports = _run_all(spark, new_session, table_path, tmp_path, None)
    assert all(r.status == "committed" for r in reports)
    held = reports[0]
    assert held.conflicts, held.summary_line()
    assert {c.kind.name for r in reports for c in r.conflicts} <= {"APPEND", "DELETE_READ"}
    assert sum(len(r.attempts) for r in reports) > WRITERS
