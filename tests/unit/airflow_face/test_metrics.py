"""What one try's report becomes in metrics (a recording Stats stands in for the backend here; the integration
test sends them to a real StatsD listener), the table's part of a metric name, and docs/metrics.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.observability import metrics
from airflow_provider_deltacc.observability.metrics import (
    emit_try_metrics,
    record_gate,
    record_live_leases,
    table_metric_name,
)

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"
TABLE = "s3a://lake/orders/"


class RecordingStats:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, float, dict[str, Any] | None]] = []

    def incr(self, stat: str, count: int = 1, rate: float = 1, *, tags: dict[str, Any] | None = None) -> None:
        self.sent.append(("incr", stat, count, tags))

    def timing(self, stat: str, dt: float, *, tags: dict[str, Any] | None = None) -> None:
        self.sent.append(("timing", stat, dt, tags))

    def gauge(self, stat: str, value: float, rate: float = 1, *, tags: dict[str, Any] | None = None) -> None:
        self.sent.append(("gauge", stat, value, tags))

    def tagged(self) -> dict[str, list[tuple[float, dict[str, Any]]]]:
        found: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        for _, stat, value, tags in self.sent:
            if tags is not None:
                found.setdefault(stat, []).append((value, tags))
        return found

    def untagged(self) -> dict[str, float]:
        return {stat: value for _, stat, value, tags in self.sent if tags is None}


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> RecordingStats:
    recording = RecordingStats()
    monkeypatch.setattr("airflow.sdk.observability.stats.Stats", recording)
    return recording


def _attempt(
    outcome: str, *, kind: str | None = None, wasted: float = 0.0, turn_wait: float = 0.0
) -> dict[str, Any]:
    conflict = {"kind": kind} if kind else None
    return {"outcome": outcome, "conflict": conflict, "wasted_s": wasted, "turn_wait_s": turn_wait}


def test_a_try_that_lost_twice_then_committed(stats: RecordingStats) -> None:
    report = {
        "status": "committed",
        "first_turn_wait_s": 2.0,
        "attempts": [
            _attempt("conflict", kind="APPEND", wasted=1.5),
            _attempt("conflict", kind="DELETE_READ", wasted=0.5, turn_wait=1.0),
            _attempt("committed"),
        ],
    }
    emit_try_metrics(TABLE, "MERGE", report)
    tagged = stats.tagged()
    base = {"table": "s3://lake/orders", "operation": "merge"}
    assert tagged["deltacc.commits"] == [(1, base)]
    assert tagged["deltacc.conflicts"] == [
        (1, {**base, "kind": "append"}),
        (1, {**base, "kind": "delete_read"}),
    ]
    assert tagged["deltacc.in_job_retries"] == [(2, base)]
    assert tagged["deltacc.wasted"] == [(2000.0, base)] and tagged["deltacc.turn_wait"] == [(3000.0, base)]
    per_table = f"deltacc.table.{table_metric_name(TABLE)}"
    assert stats.untagged() == {
        f"{per_table}.commits": 1,
        f"{per_table}.conflicts": 1,
        f"{per_table}.conflicts.append": 1,
        f"{per_table}.conflicts.delete_read": 1,
        f"{per_table}.in_job_retries": 2,
        f"{per_table}.wasted": 2000.0,
        f"{per_table}.turn_wait": 3000.0,
    }


@pytest.mark.parametrize(
    ("report", "kwargs", "counted"),
    [
        (
            {"status": "skipped_duplicate", "skipped_duplicate": True, "attempts": []},
            {},
            "deltacc.duplicate_skips",
        ),
        (
            {"status": "conflict_exhausted", "attempts": [_attempt("conflict", kind="APPEND", wasted=1)]},
            {"airflow_decision": "retry"},
            "deltacc.airflow_retries",
        ),
        (
            {"status": "conflict_fatal", "attempts": []},
            {"airflow_decision": "fail"},
            "deltacc.airflow_failures",
        ),
        ({"status": "error", "attempts": []}, {"infrastructure": True}, "deltacc.infrastructure_failures"),
    ],
    ids=["duplicate", "airflow-retry", "airflow-fail", "infrastructure"],
)
def test_what_ends_a_try_is_counted_and_nothing_commits(
    stats: RecordingStats, report: dict[str, Any], kwargs: dict[str, Any], counted: str
) -> None:
    emit_try_metrics(TABLE, "merge", report, **kwargs)
    assert counted in stats.tagged() and "deltacc.commits" not in stats.tagged()


def test_a_no_op_commits_nothing(stats: RecordingStats) -> None:
    emit_try_metrics(
        TABLE,
        "merge",
        {"status": "committed", "metrics": {"noop": True}, "attempts": [_attempt("committed")]},
    )
    assert "deltacc.commits" not in stats.tagged()


def test_the_gate_wait_and_how_it_ended(stats: RecordingStats) -> None:
    record_gate(TABLE, "optimize", waited_s=1.25, outcome="timeout")
    tags = {"table": "s3://lake/orders", "operation": "optimize"}
    assert stats.tagged() == {
        "deltacc.gate_wait": [(1250.0, {**tags, "outcome": "timeout"})],
        "deltacc.gate.timeout": [(1, tags)],
    }


def test_the_live_leases_of_a_table(stats: RecordingStats) -> None:
    record_live_leases(TABLE, 3)
    assert stats.tagged() == {"deltacc.leases.live": [(3, {"table": "s3://lake/orders"})]}
    assert stats.untagged() == {f"deltacc.table.{table_metric_name(TABLE)}.leases.live": 3}


def test_a_broken_backend_never_fails_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def incr(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("no route to the StatsD host")

        timing = gauge = incr

    monkeypatch.setattr("airflow.sdk.observability.stats.Stats", Broken())
    emit_try_metrics(TABLE, "merge", {"status": "committed", "attempts": [_attempt("committed")]})
    record_gate(TABLE, "vacuum", waited_s=1, outcome="go")
    record_live_leases(TABLE, 1)


@pytest.mark.parametrize(
    "table",
    [
        "/lake/orders",
        "s3a://lake/orders",
        "db.Orders",
        "abfss://c@acct.dfs.core.windows.net/a b/ü/" + "x" * 300,
    ],
)
def test_a_table_name_never_breaks_a_metric_name(table: str) -> None:
    name = table_metric_name(table)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}_[0-9a-f]{8}", name), name
    assert name == table_metric_name(table)


def test_spellings_of_one_table_share_a_name_and_other_tables_do_not() -> None:
    assert table_metric_name("s3a://lake/orders/") == table_metric_name("s3://lake/orders")
    long_a, long_b = "/lake/" + "a" * 100 + "/orders", "/lake/" + "b" * 100 + "/orders"
    assert table_metric_name(long_a) != table_metric_name(long_b)  # the same last 40 characters, another hash


def test_every_metric_is_in_the_docs_with_its_type() -> None:
    text = DOC.read_text(encoding="utf-8")
    names = set(re.findall(r"^\| `deltacc\.([a-z_.<>]+)` \| (counter|timer) \|", text, re.MULTILINE))
    emitted = {"commits", "conflicts", "in_job_retries", "wasted", "turn_wait", "duplicate_skips"}
    emitted |= {
        "airflow_retries",
        "airflow_failures",
        "infrastructure_failures",
        "gate_wait",
        "gate.<outcome>",
    }
    emitted |= {"conflicts.<kind>"}
    assert {name for name, _ in names} == emitted
    assert metrics.PREFIX == "deltacc"
