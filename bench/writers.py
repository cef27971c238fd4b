"""K writers at once through one Spark Connect server and one PostgreSQL lease store, as the writer operators
run them in ``spark_connect`` mode (issue 25).

    .venv/bin/python bench/writers.py [-k 8,32,64]

For each K, on a table of its own with K partitions, K threads each MERGE into their own partition without
pinning: each MERGE reads the whole table, so they collide. Each runs inside the write guard
``DeltaMergeOperator`` uses (its write lease in the PostgreSQL store, its turns in the table's queue, its
commit loop in this process, the Connect server running the job). Then the same K MERGEs run one after
another on a fresh table: the baseline, measured in the same run.

Prints per K: the makespan and its ratio to sequential, the attempts beyond each writer's first (wasted),
the conflicts, the seconds writers waited for their turn, and the lease store's transactions per task
(``pg_stat_database`` of its database, read on the server: the store's round trips, whatever statements
each holds). The goals: no writer fails, wasted attempts stay at most K, and the store's round trips per
task do not grow with K.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import SCHEMA, now
from contention import merge_spec

from airflow_provider_deltacc.contract.try_times import TryTimes

CONNECT_CONN = "bench_writers_connect"


#: Rows of each partition, as ``contention.merge_spec`` merges them.
ROWS_PER_PARTITION = 20


def seed_spec(table: str, partitions: int) -> dict[str, Any]:
    seeded = [
        [p * 1000 + i, f"p{p}", 0, "seed"] for p in range(partitions) for i in range(ROWS_PER_PARTITION)
    ]
    return {
        "operation": "append",
        "table": table,
        "source": {"kind": "rows", "rows": seeded, "schema": SCHEMA},
        "options": {"partition_by": ["part"]},
    }


def unpinned_merge(table: str, writer: int) -> dict[str, Any]:
    """Writer ``writer``'s MERGE into its own partition, not pinned to it."""
    return merge_spec(table, writer, 1, pin=False, attempts=12)


def _hook(writer: int) -> Any:
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

    return DeltaCCHook(
        conn_id=CONNECT_CONN, execution_mode="spark_connect", job_name=f"bench-writers-w{writer}"
    )


def guarded_merge(spec: dict[str, Any], writer: int, store_url: str) -> dict[str, Any]:
    """One MERGE as ``DeltaMergeOperator`` runs it in ``spark_connect`` mode: its write lease and turns in the
    PostgreSQL store, the commit loop here taking its turns."""
    from functools import partial

    from airflow_provider_deltacc.contract.storage_safety import StorageSafety
    from airflow_provider_deltacc.leases import PostgresLeaseStore
    from airflow_provider_deltacc.turns import WriteGuard, guarded_write

    hook = _hook(writer)
    safe = StorageSafety(spec["table"], "file", "spark", True, "a local table")
    guard = WriteGuard(holder=f"bench.writers.w{writer}", ttl_s=120, turn_wait_timeout_s=1800)
    with guarded_write(
        hook.job_spec(spec),
        guard,
        verdict=safe,
        open_store=lambda: PostgresLeaseStore(store_url),
        consult_log=hook.consult_log,
    ) as write:
        return write.run(partial(hook.run, consult_log=False), loop_takes_turns=hook.loop_runs_here)


def store_transactions(admin_url: str, database: str) -> int:
    """Committed and rolled-back transactions of ``database`` so far, as the server counts them."""
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_stat_clear_snapshot()"))
            row = connection.execute(
                text("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = :name"),
                {"name": database},
            ).one()
        return int(row[0])
    finally:
        engine.dispose()


def run_k(k: int, work: Path, admin_url: str, store_url: str) -> dict[str, Any]:
    from sqlalchemy import make_url

    seeded = str(work / f"k{k}-sequential")
    _hook(0).run(seed_spec(seeded, k))
    started = now()
    for writer in range(k):
        _hook(writer).run(unpinned_merge(seeded, writer))
    sequential_s = now() - started

    table = str(work / f"k{k}-concurrent")
    _hook(0).run(seed_spec(table, k))
    database = str(make_url(store_url).database)
    before = store_transactions(admin_url, database)
    barrier = threading.Barrier(k)

    def writer_run(writer: int) -> dict[str, Any]:
        barrier.wait()
        return guarded_merge(unpinned_merge(table, writer), writer, store_url)

    started = now()
    with ThreadPoolExecutor(max_workers=k) as pool:
        reports = list(pool.map(writer_run, range(k)))
    makespan_s = now() - started
    # Statistics reach pg_stat_database when a backend goes idle or ends; the writers' connections are closed.
    transactions = store_transactions(admin_url, database) - before
    attempts = [report.get("attempts") or [] for report in reports]
    return {
        "k": k,
        "committed": sum(1 for report in reports if report.get("status") == "committed"),
        "makespan_s": makespan_s,
        "sequential_s": sequential_s,
        "wasted": sum(max(len(tried) - 1, 0) for tried in attempts),
        "conflicts": sum(1 for tried in attempts for a in tried if a.get("conflict")),
        "turn_wait_s": sum(TryTimes.of(report).waited_s for report in reports),
        "store_transactions_per_task": transactions / k,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-k", default="8,32,64", help="the numbers of concurrent writers, comma-separated")
    args = parser.parse_args()
    ks = [int(k) for k in args.k.split(",")]

    from tests.support.postgres import scratch_database, throwaway_postgres
    from tests.support.spark_connect import running_connect_server

    work = Path(tempfile.mkdtemp(prefix="bench-writers-"))
    (work / "connect").mkdir()
    with (
        throwaway_postgres() as (_server, admin_url),
        scratch_database(admin_url, "bench_leases") as store_url,
        running_connect_server(work / "connect") as server,
    ):
        os.environ[f"AIRFLOW_CONN_{CONNECT_CONN.upper()}"] = server.conn_uri
        _hook(0).run(seed_spec(str(work / "warm-up"), 1))
        results = [run_k(k, work, admin_url, store_url) for k in ks]

    print(f"K writers, unpinned MERGEs, one Connect server (local[2]), one PostgreSQL lease store ({work})")
    print("    K  committed  makespan  sequential  ratio  wasted  conflicts  turn_wait_s  store tx/task")
    for r in results:
        print(
            f"{r['k']:5d}  {r['committed']:5d}/{r['k']:<3d} "
            f"{r['makespan_s']:8.1f}s {r['sequential_s']:9.1f}s "
            f"{r['makespan_s'] / r['sequential_s']:6.2f}x {r['wasted']:6d}  {r['conflicts']:9d}  "
            f"{r['turn_wait_s']:11.1f}  {r['store_transactions_per_task']:13.1f}"
        )
    failed = [r["k"] for r in results if r["committed"] != r["k"] or r["wasted"] > r["k"]]
    verdict = "met" if not failed else f"missed at K={failed}"
    print(f"goals: every writer commits, wasted attempts <= K: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
