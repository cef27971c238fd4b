"""K writers MERGE into one table at once, under six strategies, against running them one by one.

Strategies (every writer merges into its own partition; without pinning each MERGE still reads the
whole table, so they collide):

- no-retry:        our engine with a single attempt; a conflict is a failure;
- naive-loop:      the hand-written loop teams use today: 3 tries, sleep 2**attempt s, any error;
- ours-unpinned:   the OCC commit loop (classified, jittered backoff), no partition pinning;
- ours-pinned:     the OCC commit loop with partition pinning (literal partition predicates);
- queued-unpinned: as ours-unpinned, each writer holding its write lease from a SQLite lease store and taking
                   turns (windows/admission.py): writers that will conflict write in the order their leases
                   were granted, a lost conflict waits for the writers ahead before retrying (what the
                   operators do in spark_connect and in_process mode);
- queued-pinned:   as ours-pinned, with turns (pinned writers cannot conflict, so nobody waits).

Prints success rate, makespan, conflicts and wasted attempts per strategy, and the makespan ratio to
running the same K MERGEs one after another (measured in the same run).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from typing import Any

from _common import SCHEMA, create_table, merge_rows, now, session

STRATEGIES = ("no-retry", "naive-loop", "ours-unpinned", "ours-pinned", "queued-unpinned", "queued-pinned")


def merge_spec(table: str, writer: int, version: int, *, pin: bool, attempts: int) -> dict[str, Any]:
    return {
        "operation": "merge",
        "table": table,
        "source": {"kind": "rows", "rows": merge_rows(writer, version), "schema": SCHEMA},
        "options": {"keys": ["id", "part"], "partition_pin": "keyed" if pin else None},
        "retry_policy": {"max_attempts": attempts, "min_wait_s": 0.1, "max_wait_s": 10.0},
    }


def naive_loop(run: Any, spec: dict[str, Any]) -> tuple[int, dict[str, Any], int]:
    """3 tries, 2**attempt seconds apart, retrying anything: what teams hand-write today."""
    wasted = 0
    for attempt in range(1, 4):
        code, report = run(spec)
        if code == 0:
            return code, report, wasted
        wasted += 1
        if attempt < 3:
            time.sleep(2**attempt)
    return code, report, wasted


def queued(
    table: str, store_path: str, writer: int, spec: dict[str, Any], run: Any
) -> tuple[int, dict[str, Any]]:
    """Run ``spec`` as a writer operator does: queue for its write lease, retry through the queue."""
    from airflow_provider_deltacc.windows import (
        LeaseRequest,
        SqliteLeaseStore,
        TurnQueue,
        writer_lease,
        writer_op_kind,
        writer_partitions,
    )

    request = LeaseRequest(
        table, f"bench.w{writer}", writer_op_kind(spec), writer_partitions(spec), ttl_s=120
    )
    with writer_lease(lambda: SqliteLeaseStore(store_path), request, wait_timeout_s=120) as held:
        assert held is not None and held.lease is not None and held.store is not None
        return run(spec, turns=TurnQueue(held.store, held.lease, timeout_s=1800))  # type: ignore[no-any-return]


def run_strategy(spark: Any, run_job: Any, name: str, k: int, version: int) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix=f"bench-contention-{name}-")
    table = workdir + "/t"
    create_table(spark, table, partitions=k)
    pin = name in ("ours-pinned", "queued-pinned")
    attempts = 1 if name in ("no-retry", "naive-loop") else 8
    results: list[tuple[int, dict[str, Any], int]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(k)

    def writer(i: int) -> None:
        spec = merge_spec(table, i, version, pin=pin, attempts=attempts)
        barrier.wait()
        if name == "naive-loop":
            outcome = naive_loop(lambda s: run_job(s, spark), spec)
        elif name.startswith("queued-"):
            run = lambda s, turns: run_job(s, spark, turns=turns)  # noqa: E731
            code, report = queued(table, workdir + "/leases.db", i, spec, run)
            outcome = (code, report, 0)
        else:
            code, report = run_job(spec, spark)
            outcome = (code, report, 0)
        with lock:
            results.append(outcome)

    start = now()
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    makespan = now() - start
    conflicts = sum(1 for _, r, _ in results for a in r.get("attempts") or [] if a.get("conflict"))
    wasted = sum(
        w + sum(1 for a in r.get("attempts") or [] if a.get("outcome") != "committed") for _, r, w in results
    )
    return {
        "strategy": name,
        "succeeded": sum(1 for c, _, _ in results if c == 0),
        "makespan": makespan,
        "conflicts": conflicts,
        "wasted": wasted,
    }


def sequential(spark: Any, run_job: Any, k: int, version: int) -> float:
    table = tempfile.mkdtemp(prefix="bench-contention-seq-") + "/t"
    create_table(spark, table, partitions=k)
    start = now()
    for i in range(k):
        code, report = run_job(merge_spec(table, i, version, pin=False, attempts=1), spark)
        assert code == 0, report
    return now() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", type=int, default=8, help="number of concurrent writers")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="which ones to run")
    args = parser.parse_args()

    from airflow_provider_deltacc.spark_job.main import run_job

    spark = session("bench-contention")
    sequential(spark, run_job, 2, 0)  # warm-up
    baseline = sequential(spark, run_job, args.k, 1)
    print(f"sequential: {args.k} MERGEs one after another in {baseline:.1f}s", flush=True)
    rows = []
    for n, name in enumerate(args.strategies.split(","), start=2):
        row = run_strategy(spark, run_job, name, args.k, n)
        rows.append(row)
        print(f"  done {name}", flush=True)
    spark.stop()
    header = ("strategy", "success", "makespan", "conflicts", "wasted", "vs sequential")
    print(f"{header[0]:<17}{header[1]:>10}{header[2]:>11}{header[3]:>11}{header[4]:>8}{header[5]:>15}")
    for row in rows:
        print(
            f"{row['strategy']:<17}{row['succeeded']:>6}/{args.k:<3}{row['makespan']:>10.1f}s"
            f"{row['conflicts']:>11}{row['wasted']:>8}{row['makespan'] / baseline:>14.2f}x"
        )


if __name__ == "__main__":
    main()
