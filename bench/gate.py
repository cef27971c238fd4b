"""The maintenance gate: how soon maintenance starts once writers stop, and how fast leases are granted.

(a) Latency from the last conflicting lease closing to maintenance starting, through the operator's own
    path: ``DeltaOptimizeOperator.execute`` defers on an active MERGE lease, the ``DeltaGateTrigger`` runs
    inline with asyncio, the MERGE lease is released at a random moment, and the resumed operator decides
    again, takes its maintenance lease and starts its job (a stand-in hook records when; no Spark). Several
    runs per poll interval; the goal is a latency <= 2x the trigger poll interval. Airflow's own hand-off
    from triggerer to worker (scheduler loop, executor queue) is not included.
(b) Lease-store acquire throughput, SQLite and PostgreSQL side by side: one process acquiring (and
    releasing) writer leases in a loop, and several processes doing so at once on one table (every
    acquisition is serialized per table) and on one table each.

PostgreSQL: ``$DELTACC_TEST_POSTGRES_URL`` if set, else a throw-away server from ``scripts/postgres.sh``
(installed with apt-get if missing), stopped afterwards.

    .venv/bin/python bench/gate.py [--runs 5] [--polls 0.25,0.5,1.0] [--seconds 3] [--procs 4]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("AIRFLOW_HOME", str(ROOT / ".test-airflow-home"))
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")


# -- (a) latency -----------------------------------------------------------------------------------------


class _TI:
    def __init__(self, task_id: str) -> None:
        self.dag_id, self.task_id, self.map_index, self.run_id = "maintenance", task_id, -1, "bench__1"

    def xcom_push(self, key: str, value: Any) -> None:
        return None


class _StartHook:
    """Records when the maintenance job would start."""

    def __init__(self) -> None:
        self.started_at: datetime | None = None

    def run(self, spec: dict[str, Any]) -> dict[str, Any]:
        self.started_at = datetime.now(UTC)
        return {"status": "committed", "table": spec["table"], "attempts": []}

    def on_kill(self) -> None:
        return None


async def _first_event(trigger: Any) -> dict[str, Any]:
    generator = trigger.run()
    try:
        event = await generator.__anext__()
    finally:
        await generator.aclose()
    payload: dict[str, Any] = event.payload
    return payload


def one_latency(store_url: str, poll_s: float) -> float:
    """Seconds from the MERGE lease's release to the OPTIMIZE job's start, through defer and resume."""
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_provider_deltacc.contract.op_kinds import OpKind
    from airflow_provider_deltacc.leases import LeaseRequest, store_from_url
    from airflow_provider_deltacc.operators import DeltaOptimizeOperator

    table = f"bench.orders_{uuid.uuid4().hex[:8]}"  # a catalog name: nothing to read with delta-rs
    with store_from_url(store_url) as store:
        writer = store.try_acquire(
            LeaseRequest(table, "ingest.merge_orders/bench", OpKind.MERGE, None, 300.0), lambda _l: False
        ).lease
        assert writer is not None
        hook = _StartHook()
        op = DeltaOptimizeOperator(
            task_id="optimize", table=table, lease_store_url=store_url, poll_interval=poll_s, deferrable=True
        )
        op.__dict__["hook"] = hook
        context: dict[str, Any] = {"ti": _TI("optimize"), "run_id": "bench__1"}
        try:
            op.execute(context)  # type: ignore[arg-type]
            raise AssertionError("OPTIMIZE did not defer while a MERGE lease was active")
        except TaskDeferred as deferred:
            trigger, kwargs = deferred.trigger, dict(deferred.kwargs or {})
        released: list[datetime] = []

        def release() -> None:
            released.append(store.now())
            store.release(writer.lease_id)

        timer = threading.Timer(random.uniform(0.2, 0.2 + 2 * poll_s), release)
        timer.start()
        event = asyncio.run(_first_event(trigger))
        timer.join()
        op.execute_complete(context, event=event, **kwargs)  # type: ignore[arg-type]
    assert hook.started_at is not None
    return (hook.started_at - released[0]).total_seconds()


def latency_section(store_url: str, polls: list[float], runs: int) -> None:
    import logging

    logging.getLogger("airflow_provider_deltacc").setLevel(logging.WARNING)
    print("(a) latency: last conflicting lease released -> maintenance job started (SQLite store)")
    print(f"    {'poll s':>7} {'runs':>5} {'median s':>9} {'max s':>7} {'max/poll':>9}  goal <= 2x poll")
    for poll in polls:
        samples = [one_latency(store_url, poll) for _ in range(runs)]
        worst = max(samples)
        verdict = "ok" if worst <= 2 * poll else "MISSED"
        print(
            f"    {poll:>7.2f} {runs:>5d} {statistics.median(samples):>9.3f} {worst:>7.3f} "
            f"{worst / poll:>8.2f}x  {verdict}"
        )


# -- (b) throughput --------------------------------------------------------------------------------------


def _acquire_loop(args: tuple[str, str, float]) -> int:
    """Acquire and release writer leases on ``table`` for ``seconds``; return how many were granted."""
    store_url, table, seconds = args
    from airflow_provider_deltacc.contract.op_kinds import OpKind
    from airflow_provider_deltacc.leases import LeaseRequest, maintenance_lease_conflicts, store_from_url

    conflicts = maintenance_lease_conflicts(OpKind.MERGE, [{"date": "2026-11-20"}])
    request = LeaseRequest(
        table, f"bench.writer/{os.getpid()}", OpKind.MERGE, [{"date": "2026-11-20"}], 120.0
    )
    granted = 0
    with store_from_url(store_url) as store:
        store.try_acquire(request, conflicts)  # warm the connection pool
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            result = store.try_acquire(request, conflicts)
            if result.lease is not None:
                granted += 1
                store.release(result.lease.lease_id)
    return granted


def throughput(store_url: str, seconds: float, procs: int) -> dict[str, float]:
    tag = uuid.uuid4().hex[:6]
    out: dict[str, float] = {}
    out["1 process"] = _acquire_loop((store_url, f"/bench/t-{tag}", seconds)) / seconds
    context = multiprocessing.get_context("spawn")
    with context.Pool(procs) as pool:
        same = pool.map(_acquire_loop, [(store_url, f"/bench/same-{tag}", seconds)] * procs)
        out[f"{procs} procs, 1 table"] = sum(same) / seconds
        each = pool.map(_acquire_loop, [(store_url, f"/bench/each-{tag}-{i}", seconds) for i in range(procs)])
        out[f"{procs} procs, 1 table each"] = sum(each) / seconds
    return out


@contextmanager
def postgres_url() -> Iterator[str | None]:
    existing = os.environ.get("DELTACC_TEST_POSTGRES_URL")
    if existing:
        yield existing
        return
    directory = tempfile.mkdtemp(prefix="deltacc-bench-pg-", dir="/tmp")
    script = str(ROOT / "scripts" / "postgres.sh")
    started = subprocess.run([script, "start", directory], capture_output=True, text=True, timeout=900)
    if started.returncode != 0:
        print(f"    PostgreSQL not available: {started.stderr.strip()[-300:]}", file=sys.stderr)
        yield None
        return
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run([script, "stop", directory], capture_output=True, text=True, timeout=120)


def throughput_section(sqlite_url: str, seconds: float, procs: int) -> None:
    print(
        "(b) lease-store acquire throughput (acquire + release of a writer lease; leases granted per second)"
    )
    results = {"SQLite": throughput(sqlite_url, seconds, procs)}
    with postgres_url() as pg_url:
        if pg_url is not None:
            results["PostgreSQL"] = throughput(pg_url, seconds, procs)
    rows = list(results["SQLite"])
    print(f"    {'':<24}" + "".join(f"{name:>12}" for name in results))
    for row in rows:
        print(f"    {row:<24}" + "".join(f"{results[name][row]:>12.0f}" for name in results))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5, help="latency runs per poll interval")
    parser.add_argument("--polls", default="0.25,0.5,1.0", help="trigger poll intervals in seconds")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each throughput measurement")
    parser.add_argument("--procs", type=int, default=4, help="concurrent processes for throughput")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="deltacc-bench-gate-"))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"bench/gate.py on {os.cpu_count()} CPUs, load average {load}")
    sqlite_url = f"sqlite:///{work / 'leases.db'}"
    latency_section(sqlite_url, [float(p) for p in args.polls.split(",")], args.runs)
    throughput_section(f"sqlite:///{work / 'throughput.db'}", args.seconds, args.procs)


if __name__ == "__main__":
    main()
