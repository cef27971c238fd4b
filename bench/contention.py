"""K writers MERGE into one table at once, under six strategies, against running them one by one.

Strategies (every writer merges into its own partition; without pinning each MERGE still reads the
whole table, so they collide):

- no-retry:        our engine with a single attempt; a conflict is a failure;
- naive-loop:      the hand-written loop teams use today: 3 tries, sleep 2**attempt s, any error;
- ours-unpinned:   the OCC commit loop (classified, jittered backoff), no partition pinning;
- ours-pinned:     the OCC commit loop with partition pinning (literal partition predicates);
- turns-unpinned: as ours-unpinned, each writer holding its write lease from a SQLite lease store and taking
                   turns (turns/lease_turns.py): writers that will conflict write in the order their leases
                   were granted, a lost conflict waits for the writers ahead before retrying (what the
                   operators do in spark_connect and in_process mode);
- turns-pinned:   as ours-pinned, with turns (pinned writers cannot conflict, so nobody waits).

And in ``spark_submit`` mode, a Spark driver per writer (a ``local[1]`` master), as the operators run them:

- submit-unpinned:        each driver's commit loop alone (classified, jittered backoff), no lease;
- submit-turns-unpinned: each writer holds its write lease and takes its first turn before it submits,
                          and its driver asks the worker for its later turns (turns/service.py).

And on a table liquid-clustered by ``part`` instead (no partitions; in OSS Delta a clustering-column
predicate does not keep MERGEs apart, docs/clustering.md), each writer still merging its own ``part``:

- clustered-retries: the OCC commit loop alone (plain retries);
- clustered-turns:  with write leases and turns, as turns-unpinned;
- clustered-staging: each writer blind-appends its rows to a staging table (appends never conflict), then
                     one MERGE of the staged rows into the clustered table.

Prints success rate, makespan, conflicts and wasted attempts per strategy, and the makespan ratio to
running the same K MERGEs one after another (measured in the same run, on the same kind of table).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from functools import partial
from typing import Any

from _common import SCHEMA, create_clustered_table, create_table, merge_rows, now, session

STRATEGIES = (
    "no-retry",
    "naive-loop",
    "ours-unpinned",
    "ours-pinned",
    "turns-unpinned",
    "turns-pinned",
    "clustered-retries",
    "clustered-turns",
    "clustered-staging",
    "submit-unpinned",
    "submit-turns-unpinned",
)
SUBMIT_CONN = "bench_contention_submit"


def merge_spec(table: str, writer: int, version: int, *, pin: bool, attempts: int) -> dict[str, Any]:
    return {
        "operation": "merge",
        "table": table,
        "source": {"kind": "rows", "rows": merge_rows(writer, version), "schema": SCHEMA},
        "options": {"keys": ["id", "part"], "partition_pin": "keyed" if pin else None},
        "commit_retry": {"max_attempts": attempts, "min_wait_s": 0.1, "max_wait_s": 10.0},
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


def with_turns(
    table: str, store_path: str, writer: int, spec: dict[str, Any], run: Any
) -> tuple[int, dict[str, Any]]:
    """Run ``spec`` as a writer operator does: queue for its write lease, retry through the queue."""
    from airflow_provider_deltacc.leases import LeaseRequest, SqliteLeaseStore
    from airflow_provider_deltacc.turns import LeaseTurns, writer_lease, writer_op_kind, writer_partitions

    request = LeaseRequest(
        table, f"bench.w{writer}", writer_op_kind(spec), writer_partitions(spec), ttl_s=120
    )
    with writer_lease(lambda: SqliteLeaseStore(store_path), request, wait_timeout_s=120) as held:
        assert held is not None and held.lease is not None and held.store is not None
        return run(spec, turns=LeaseTurns(held.store, held.lease, timeout_s=1800))  # type: ignore[no-any-return]


def staged(
    table: str, staging: str, writer: int, spec: dict[str, Any], run: Any, barrier: threading.Barrier
) -> tuple[int, dict[str, Any]]:
    """Blind-append the writer's rows to ``staging``; after every writer appended, writer 0 runs the one
    MERGE of all staged rows into ``table``. Returns the append's (or, for writer 0, the MERGE's) outcome."""
    append = {
        "operation": "append",
        "table": staging,
        "source": spec["source"],
        "commit_retry": spec["commit_retry"],
    }
    code, report = run(append)
    barrier.wait()
    if writer != 0 or code != 0:
        return code, report
    merge = {
        **spec,
        "source": {"kind": "sql", "query": f"SELECT * FROM delta.`{staging}`"},
        "options": {"keys": ["id", "part"], "partition_pin": None},
    }
    code, merged = run(merge)
    merged["attempts"] = [*(report.get("attempts") or []), *(merged.get("attempts") or [])]
    return code, merged


def submitted(spec: dict[str, Any], store_path: str | None, writer: int) -> tuple[int, dict[str, Any]]:
    """Run ``spec`` in a spark-submit driver of its own; with ``store_path``, as a writer operator does: its
    write lease, its first turn before it submits, its later turns served to the driver."""
    from airflow_provider_deltacc.contract.storage_safety import StorageSafety
    from airflow_provider_deltacc.exceptions import DeltaCCError
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
    from airflow_provider_deltacc.leases import SqliteLeaseStore
    from airflow_provider_deltacc.turns import WriteGuard, guarded_write

    hook = DeltaCCHook(
        conn_id=SUBMIT_CONN,
        job_name=f"bench-contention-w{writer}",
        submit_options={"driver_memory": "512m"},
    )
    run = partial(hook.run, consult_log=False)
    try:
        if store_path is None:
            return 0, run(spec)
        safe = StorageSafety(spec["table"], "file", "spark", True, "a local table")
        guard = WriteGuard(holder=f"bench.w{writer}", ttl_s=120, turn_wait_timeout_s=1800)
        with guarded_write(
            spec, guard, verdict=safe, open_store=lambda: SqliteLeaseStore(store_path)
        ) as write:
            return 0, write.run(run, loop_takes_turns=False, serve_turns_to_job=True)
    except DeltaCCError as exc:
        return 1, exc.report


def run_strategy(spark: Any, run_job: Any, name: str, k: int, version: int) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix=f"bench-contention-{name}-")
    table = workdir + "/t"
    clustered = name.startswith("clustered-")
    if clustered:
        create_clustered_table(spark, table, partitions=k)
    else:
        create_table(spark, table, partitions=k)
    if name == "clustered-staging":  # created empty first, so the concurrent appends never race to create it
        empty = {"kind": "rows", "rows": [], "schema": SCHEMA}
        code, report = run_job({"operation": "append", "table": workdir + "/staging", "source": empty}, spark)
        assert code == 0, report
    pin = name in ("ours-pinned", "turns-pinned")
    attempts = 1 if name in ("no-retry", "naive-loop") else 8
    merged_after = threading.Barrier(k)
    results: list[tuple[int, dict[str, Any], int]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(k)

    def writer(i: int) -> None:
        spec = merge_spec(table, i, version, pin=pin, attempts=attempts)
        barrier.wait()
        if name == "naive-loop":
            outcome = naive_loop(lambda s: run_job(s, spark), spec)
        elif name.startswith("turns-") or name == "clustered-turns":
            run = lambda s, turns: run_job(s, spark, turns=turns)  # noqa: E731
            code, report = with_turns(table, workdir + "/leases.db", i, spec, run)
            outcome = (code, report, 0)
        elif name.startswith("submit-"):
            store = workdir + "/leases.db" if name == "submit-turns-unpinned" else None
            code, report = submitted(spec, store, i)
            outcome = (code, report, 0)
        elif name == "clustered-staging":
            code, report = staged(
                table, workdir + "/staging", i, spec, lambda s: run_job(s, spark), merged_after
            )
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


def sequential(spark: Any, run_job: Any, k: int, version: int, *, clustered: bool = False) -> float:
    table = tempfile.mkdtemp(prefix="bench-contention-seq-") + "/t"
    (create_clustered_table if clustered else create_table)(spark, table, partitions=k)
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

    os.environ[f"AIRFLOW_CONN_{SUBMIT_CONN.upper()}"] = json.dumps({"conn_type": "spark", "host": "local[1]"})
    spark = session("bench-contention")
    sequential(spark, run_job, 2, 0)  # warm-up
    names = args.strategies.split(",")
    unknown = sorted(set(names) - set(STRATEGIES))
    if unknown:
        parser.error(f"unknown strategies {unknown}; choose from {', '.join(STRATEGIES)}")
    baseline = sequential(spark, run_job, args.k, 1)
    print(f"sequential: {args.k} MERGEs one after another in {baseline:.1f}s", flush=True)
    baselines: dict[bool | str, float] = {False: baseline}
    if any(name.startswith("clustered-") for name in names):
        baselines[True] = sequential(spark, run_job, args.k, 1, clustered=True)
        print(f"sequential, clustered table: {baselines[True]:.1f}s", flush=True)
    if any(name.startswith("submit-") for name in names):
        submit_run = lambda spec, _spark=None: submitted(spec, None, 0)  # noqa: E731
        baselines["submit"] = sequential(spark, submit_run, args.k, 1)
        print(f"sequential, a spark-submit driver each: {baselines['submit']:.1f}s", flush=True)
    rows = []
    for n, name in enumerate(names, start=2):
        row = run_strategy(spark, run_job, name, args.k, n)
        rows.append(row)
        print(f"  done {name}", flush=True)
    spark.stop()
    header = ("strategy", "success", "makespan", "conflicts", "wasted", "vs sequential")
    print(f"{header[0]:<17}{header[1]:>10}{header[2]:>11}{header[3]:>11}{header[4]:>8}{header[5]:>15}")
    for row in rows:
        print(
            f"{row['strategy']:<17}{row['succeeded']:>6}/{args.k:<3}{row['makespan']:>10.1f}s"
            f"{row['conflicts']:>11}{row['wasted']:>8}"
            f"{row['makespan'] / baselines[_baseline(row['strategy'])]:>14.2f}x"
        )


def _baseline(strategy: str) -> bool | str:
    """Which sequential run a strategy is compared with: its table kind's, or spark-submit's."""
    return "submit" if strategy.startswith("submit-") else strategy.startswith("clustered-")


if __name__ == "__main__":
    main()
