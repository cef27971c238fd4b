"""Turns on real Delta commits, with each writer holding its write lease in a real lease store (SQLite and
PostgreSQL) as the operators do: writers that will conflict commit one after another with no conflict at
all, and a writer that loses a conflict to a writer granted before it waits for that writer to finish, then
retries once."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.leases import LeaseRequest, store_from_url
from airflow_provider_deltacc.spark_job.main import run_job
from airflow_provider_deltacc.turns import LeaseTurns, writer_lease, writer_op_kind, writer_partitions
from tests.integration.engine.helpers import contents, create_table, rows_source
from tests.support.gate import Gate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

DATES = ["2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"]


def _merge(table: str, index: int, *, pin: Any) -> dict[str, Any]:
    return {
        "operation": "merge",
        "table": table,
        "source": rows_source([[index, DATES[index], f"new{index}"]]),
        "options": {"keys": ["id", "date"], "partition_pin": pin},
        "commit_retry": {"max_attempts": 6, "min_wait_s": 0.05, "max_wait_s": 0.5},
    }


def _request(spec: dict[str, Any], holder: str) -> LeaseRequest:
    job = parse_spec(spec)
    return LeaseRequest(job.table.name, holder, writer_op_kind(job), writer_partitions(job), ttl_s=60)


def test_unpinned_merges_take_turns_and_never_conflict(
    spark: SparkSession, store_url: str, tmp_path: Path
) -> None:
    table = str(tmp_path / "orders")
    create_table(spark, table, [(i, DATES[i], f"old{i}") for i in range(4)])
    reports: dict[int, dict[str, Any]] = {}
    errors: dict[int, BaseException] = {}
    windows: dict[int, tuple[float, float]] = {}
    barrier = threading.Barrier(4)

    def writer(index: int) -> None:
        spec = _merge(table, index, pin=None)
        try:
            barrier.wait()
            with writer_lease(
                lambda: store_from_url(store_url), _request(spec, f"w{index}"), wait_timeout_s=60
            ) as held:
                assert held is not None and held.lease is not None and held.store is not None
                turns = LeaseTurns(held.store, held.lease, timeout_s=300)
                started = time.monotonic()
                code, report = run_job(spec, spark, turns=turns)
                windows[index] = (started + report["first_turn_wait_s"], time.monotonic())
                assert code == ExitCode.SUCCESS, report
                reports[index] = report
        except BaseException as exc:  # reported by the assertion below
            errors[index] = exc

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    assert [len(reports[i]["attempts"]) for i in range(4)] == [1, 1, 1, 1], [reports[i] for i in range(4)]
    assert not any(a.get("conflict") for r in reports.values() for a in r["attempts"])
    assert sum(1 for r in reports.values() if r["first_turn_wait_s"] > 0) >= 2, "nobody waited for a turn"
    assert contents(spark, table) == sorted(((str(i), DATES[i], f"new{i}") for i in range(4)), key=str)
    versions = sorted(r["table_version"] for r in reports.values())
    assert versions == [1, 2, 3, 4]


def test_a_lost_conflict_waits_for_the_writer_granted_before_it_then_retries_once(
    spark: SparkSession, store_url: str, tmp_path: Path
) -> None:
    """An unpinned blind append (granted first) and a MERGE pinned to one day can conflict, so both are let
    in. The MERGE reads its snapshot and is held; the append commits into that day and keeps its lease: the
    MERGE loses with APPEND and waits for the append's lease to end, then commits on its second attempt."""
    table = str(tmp_path / "orders")
    create_table(spark, table, [(0, DATES[0], "old0"), (1, DATES[1], "old1")])
    append = {"operation": "append", "table": table, "source": rows_source([[9, DATES[0], "appended"]])}
    merge = _merge(table, 0, pin="keyed")
    gate = Gate(tmp_path)
    appended = threading.Event()
    finish_append = threading.Event()
    retrying = threading.Event()
    append_granted = threading.Event()

    class SignallingTurns(LeaseTurns):
        def retry(self, conflict_kind: str, attempt: int) -> float | None:
            retrying.set()
            return super().retry(conflict_kind, attempt)

    outcome: dict[str, Any] = {}

    def appender() -> None:
        with writer_lease(lambda: store_from_url(store_url), _request(append, "appender"), wait_timeout_s=60):
            append_granted.set()
            gate.wait_entered()  # the MERGE has read its snapshot
            outcome["append"] = run_job(append, spark)
            appended.set()
            finish_append.wait(60)

    def merger() -> None:
        with writer_lease(
            lambda: store_from_url(store_url), _request(merge, "merger"), wait_timeout_s=60
        ) as held:
            assert held is not None and held.lease is not None and held.store is not None
            turns = SignallingTurns(held.store, held.lease, timeout_s=60)

            def hold(frame: DataFrame, attempt: int) -> DataFrame:
                return gate.hold(frame.coalesce(1), "id") if attempt == 1 else frame

            outcome["merge"] = run_job(merge, spark, source_hook=hold, turns=turns)

    first = threading.Thread(target=appender)
    first.start()
    # The append's lease is granted first: the MERGE's turn waits only for leases granted before it.
    assert append_granted.wait(120), "the append's lease was never granted"
    second = threading.Thread(target=merger)
    second.start()
    assert appended.wait(120), "the append never committed"
    gate.release()  # the MERGE now commits, fails, and waits for the append's lease
    assert retrying.wait(120), "the MERGE never lost its conflict"
    time.sleep(0.8)
    assert second.is_alive(), "the MERGE did not wait for the writer ahead of it"
    finish_append.set()
    first.join(timeout=60)
    second.join(timeout=120)
    code, report = outcome["merge"]
    assert code == ExitCode.SUCCESS, report
    lost, won = report["attempts"]
    assert lost["conflict"]["kind"] == "append" and lost["turn_wait_s"] >= 0.5 and lost["wait_s"] == 0.0
    assert won["outcome"] == "committed"
    assert report["first_turn_wait_s"] == 0.0  # they can conflict, not will: both were let in at once
    assert contents(spark, table) == sorted(
        [("0", DATES[0], "new0"), ("1", DATES[1], "old1"), ("9", DATES[0], "appended")], key=str
    )
