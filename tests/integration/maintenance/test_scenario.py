"""THE SCENARIO (issue 5): four concurrent writers on one real Delta table while maintenance asks to OPTIMIZE
and then VACUUM.

Writers (real threads, each iteration one task instance of the ingest DAG calling the operator's execute
path, ``in_process`` on the shared Spark JVM): two MERGEs pinned to their own partition and two blind
appends, for the length of a declared write window. A fifth, late MERGE starts while OPTIMIZE holds its
lease and has to wait for it. Maintenance runs through the operators' own code path: execute -> TaskDeferred
-> the trigger run inline with asyncio -> execute_complete (-> deferred again if it lost a race) -> the job.

Judged afterwards, independently of the code under test: the lease records in the store, the Delta history
read with delta-rs, and the table contents read with delta-rs.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.exceptions import TaskDeferred

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import WriteWindow
from airflow_provider_deltacc.leases import Lease, clash, store_from_url
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaVacuumOperator,
)
from tests.unit.maintenance.helpers import context, first_event

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, date DATE, v STRING"
D_A, D_B, D_C, D_D = "2026-11-20", "2026-11-21", "2026-11-22", "2026-11-23"
KEYS = range(10)
#: The write window: the writers loop through it, a Spark write a pass, so its length is the scenario's CPU;
#: each writer runs more than once in it on a loaded 2-core box, and maintenance asks 2 s into it.
WINDOW_S = 8.0
#: Delta commit timestamps are milliseconds; lease times are microseconds.
SLACK = timedelta(milliseconds=5)


@dataclass
class Outcome:
    name: str
    reports: list[dict[str, Any]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    last_value: str = ""
    appended: list[tuple[int, str, str]] = field(default_factory=list)


def _create_table(spark: SparkSession, path: str) -> list[tuple[int, str, str]]:
    from pyspark.sql import functions as F

    rows = [(k, day, "init") for day in (D_A, D_B) for k in KEYS] + [(900, D_C, "init"), (901, D_D, "init")]
    frame = spark.createDataFrame(rows, "id INT, date STRING, v STRING").withColumn(
        "date", F.col("date").cast("date")
    )
    frame.coalesce(1).write.format("delta").partitionBy("date").save(path)
    # VACUUM may delete what OPTIMIZE removed at once: only safe because the gate keeps writers away.
    retention = "'delta.deletedFileRetentionDuration' = 'interval 0 hours'"
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({retention})")
    return rows


def _common(store_url: str) -> dict[str, Any]:
    return {
        "execution_mode": "in_process",
        "lease_store_url": store_url,
        "maintenance_wait_timeout": 120,
        "commit_retry": {"max_attempts": 8, "min_wait_s": 0.05, "max_wait_s": 0.5},
    }


def _merge_once(path: str, store_url: str, day: str, tag: str, iteration: int, out: Outcome) -> None:
    value = f"{tag}{iteration}"
    op = DeltaMergeOperator(
        task_id=f"merge_{tag}",
        table=path,
        source={"kind": "rows", "schema": SCHEMA, "rows": [[k, day, value] for k in KEYS]},
        keys=["id", "date"],
        **_common(store_url),
    )
    ctx = context(dag_id="ingest", task_id=f"merge_{tag}")
    ctx["run_id"] = ctx["ti"].run_id = f"scheduled__{tag}{iteration}"
    try:
        out.reports.append(op.execute(ctx))
        out.last_value = value
    except BaseException as exc:  # judged by the test
        out.errors.append(exc)


def _merge_loop(path: str, store_url: str, day: str, tag: str, until: float, out: Outcome) -> None:
    iteration = 0
    while time.monotonic() < until:
        _merge_once(path, store_url, day, tag, iteration, out)
        iteration += 1


def _append_loop(path: str, store_url: str, day: str, base: int, until: float, out: Outcome) -> None:
    iteration = 0
    while time.monotonic() < until:
        rows = [(base + iteration * 5 + j, day, f"{out.name}{iteration}") for j in range(5)]
        op = DeltaAppendOperator(
            task_id=out.name,
            table=path,
            source={"kind": "rows", "schema": SCHEMA, "rows": [list(r) for r in rows]},
            **_common(store_url),
        )
        ctx = context(dag_id="ingest", task_id=out.name)
        ctx["run_id"] = ctx["ti"].run_id = f"scheduled__{out.name}{iteration}"
        try:
            out.reports.append(op.execute(ctx))
            out.appended += rows
        except BaseException as exc:  # judged by the test
            out.errors.append(exc)
        iteration += 1


def drive(op: Any, task_id: str) -> tuple[dict[str, Any], int]:
    """Run a deferrable operator as Airflow would, with the trigger inline; return (result, deferrals)."""
    ctx = context(dag_id="maintenance", task_id=task_id)
    deferrals = 0
    call: Callable[[], Any] = lambda: op.execute(ctx)  # noqa: E731
    while True:
        try:
            return call(), deferrals
        except TaskDeferred as deferred:
            deferrals += 1
            event = asyncio.run(first_event(deferred.trigger, timeout_s=240))
            kwargs = dict(deferred.kwargs or {})
            call = lambda event=event, kwargs=kwargs: op.execute_complete(ctx, event=event, **kwargs)  # noqa: E731


def _overlap(a: Lease, b: Lease, now: datetime) -> bool:
    a_end, b_end = a.end_time(now) or now, b.end_time(now) or now
    return a.acquired_at < b_end and b.acquired_at < a_end


def _within(moment: datetime, lease: Lease, now: datetime) -> bool:
    end = lease.end_time(now) or now
    return lease.acquired_at - SLACK <= moment <= end + SLACK


def run_scenario(
    spark: SparkSession, tmp_path: Path, store_url: str, window_s: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "orders")
    initial = _create_table(spark, path)
    started = datetime.now(UTC)
    window = WriteWindow(
        table=path, start=started, end=started + timedelta(seconds=window_s), name="ingest window (MERGE)"
    )
    until = time.monotonic() + window_s
    merges = [Outcome("merge_a"), Outcome("merge_b")]
    appends = [Outcome("append_c"), Outcome("append_d")]
    late = Outcome("late_merge")
    threads = [
        threading.Thread(target=_merge_loop, args=(path, store_url, D_A, "a", until, merges[0])),
        threading.Thread(target=_merge_loop, args=(path, store_url, D_B, "b", until, merges[1])),
        threading.Thread(target=_append_loop, args=(path, store_url, D_C, 1000, until, appends[0])),
        threading.Thread(target=_append_loop, args=(path, store_url, D_D, 5000, until, appends[1])),
    ]
    for thread in threads:
        thread.start()

    optimize_leased = threading.Event()

    def late_merge() -> None:
        # Starts as soon as OPTIMIZE holds its lease: a conflicting writer that must wait for it, briefly.
        if not optimize_leased.wait(window_s + 120):
            late.errors.append(TimeoutError("OPTIMIZE never took its lease"))
            return
        # merge_a's last MERGE (on the same partition) comes first, so the late one writes D_A's final rows.
        threads[0].join(timeout=180)
        _merge_once(path, store_url, D_A, "late", 0, late)

    late_thread = threading.Thread(target=late_merge)
    late_thread.start()

    time.sleep(min(3.0, window_s / 4))  # maintenance asks while the window is open and writers are busy
    maintenance = {
        "write_windows": [window],
        "lease_store_url": store_url,
        "execution_mode": "in_process",
        "deferrable": True,
    }
    # The whole table, so the late MERGE (on a partition a writer may still hold) has to wait for it.
    optimize_op = DeltaOptimizeOperator(
        task_id="optimize", table=path, poll_interval=1.0, only_closed_partitions=False, **maintenance
    )
    run_optimize = optimize_op.hook.run

    def run_leased(spec: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        optimize_leased.set()  # the operator runs its job only inside its granted lease
        return run_optimize(spec, **kwargs)

    monkeypatch.setattr(optimize_op.hook, "run", run_leased)
    optimize, optimize_deferrals = drive(optimize_op, "optimize")
    vacuum, _ = drive(
        DeltaVacuumOperator(task_id="vacuum", table=path, poll_interval=1.0, **maintenance), "vacuum"
    )
    for thread in [*threads, late_thread]:
        thread.join(timeout=180)

    # -- no writer failure was caused by maintenance (none failed at all; no conflict came from it)
    writers = [*merges, *appends, late]
    assert [(w.name, w.errors) for w in writers if w.errors] == []
    # How many iterations fit into the window depends on the machine; every writer ran at least once.
    assert all(w.reports for w in [*merges, *appends]), [(w.name, len(w.reports)) for w in writers]
    assert len(late.reports) == 1
    maintenance_conflicts = [
        (w.name, attempt["conflict"])
        for w in writers
        for report in w.reports
        for attempt in report.get("attempts") or []
        if attempt.get("conflict")
        and str(attempt["conflict"].get("winning_operation") or "").upper().startswith(("OPTIMIZE", "VACUUM"))
    ]
    assert maintenance_conflicts == []
    assert optimize["status"] == "committed" and vacuum["status"] == "committed"
    assert optimize_deferrals >= 1, "OPTIMIZE was asked inside the write window: it must have waited"

    # -- the lease records -------------------------------------------------------------------------
    with store_from_url(store_url) as store:
        now = store.now()
        history = store.history(path)
        assert store.active(path) == []
    maint = {lease.op_kind: lease for lease in history if lease.holder.startswith("maintenance.")}
    assert sorted(maint) == [OpKind.OPTIMIZE, OpKind.VACUUM]
    assert len([lease for lease in history if lease.op_kind in (OpKind.OPTIMIZE, OpKind.VACUUM)]) == 2
    writer_leases = [lease for lease in history if not lease.holder.startswith("maintenance.")]
    assert len(writer_leases) == sum(len(w.reports) for w in writers)
    assert {lease.op_kind for lease in writer_leases} == {OpKind.MERGE, OpKind.BLIND_APPEND}
    assert all(lease.partitions == [{"date": D_A}] for lease in writer_leases if "merge_a" in lease.holder)
    for m in maint.values():
        for other in history:
            if other is m or not clash(m.op_kind, m.partitions, other.op_kind, other.partitions).blocks:
                continue
            assert not _overlap(m, other, now), f"{m.describe()} overlapped {other.describe()}"
    late_lease = next(lease for lease in writer_leases if "merge_late" in lease.holder)
    assert late_lease.acquired_at >= maint[OpKind.OPTIMIZE].end_time(now)  # type: ignore[operator]

    # -- maintenance completed after the window closed ---------------------------------------------
    assert window.end is not None
    assert maint[OpKind.OPTIMIZE].acquired_at >= window.end
    assert maint[OpKind.VACUUM].acquired_at >= maint[OpKind.OPTIMIZE].end_time(now)  # type: ignore[operator]

    # -- the Delta history (delta-rs) agrees with the leases ---------------------------------------
    table = DeltaTable(path)
    commits = [
        (str(c["operation"]), datetime.fromtimestamp(int(c["timestamp"]) / 1000, UTC), c)
        for c in table.history()
    ]
    optimizes = [when for op, when, _ in commits if op == "OPTIMIZE"]
    assert len(optimizes) == 1 and _within(optimizes[0], maint[OpKind.OPTIMIZE], now)
    assert optimizes[0] >= window.end
    for op, when, _ in commits:
        if op == "MERGE":
            assert not _within(when, maint[OpKind.OPTIMIZE], now), (
                f"a MERGE committed during OPTIMIZE at {when}"
            )
        if op in ("MERGE", "WRITE") and when >= started:
            assert not _within(when, maint[OpKind.VACUUM], now), f"a {op} committed during VACUUM at {when}"
            assert any(_within(when, lease, now) for lease in writer_leases), f"{op} at {when} had no lease"
    vacuums = [(op, when, c) for op, when, c in commits if op.startswith("VACUUM")]
    assert all(_within(when, maint[OpKind.VACUUM], now) for _, when, _ in vacuums)

    # -- the table contents, read back with delta-rs -----------------------------------------------
    rows = {(r["id"], str(r["date"]), r["v"]) for r in table.to_pyarrow_table().to_pylist()}
    expected = {(k, D_A, "late0") for k in KEYS}
    expected |= {(k, D_B, merges[1].last_value) for k in KEYS}
    expected |= {(i, d, v) for i, d, v in initial if d in (D_C, D_D)}
    for w in appends:
        expected |= set(w.appended)
    assert rows == expected
    assert table.to_pyarrow_table().num_rows == len(expected)


@pytest.mark.timeout(300)
def test_scenario_sqlite(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_scenario(
        spark, tmp_path, f"sqlite:///{tmp_path / 'leases.db'}", window_s=WINDOW_S, monkeypatch=monkeypatch
    )


@pytest.mark.timeout(300)
def test_scenario_postgres(
    spark: SparkSession, tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_scenario(spark, tmp_path, postgres_url, window_s=WINDOW_S, monkeypatch=monkeypatch)
