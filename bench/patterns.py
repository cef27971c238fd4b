"""K sources into one target: direct concurrent MERGEs (our OCC retries) vs staging-append-then-merge.

Both run in this process on one local Spark session through the engine (``spark_job.main.run_job``), no
Airflow scheduler. Every source carries rows for the SAME partition (the realistic hot case: today's
date), plus one key that every source updates, so direct MERGEs read what the others write and conflict.

- direct:  K threads each MERGE their source into ``direct`` at once (pinned, in-job retries with jitter);
- staging: K threads blind-append their source (tagged with a batch id) into ``staging`` at once, then ONE
  MERGE of those batches into ``staged``, then the cleanup DELETE of exactly those batches.

Prints makespan, conflicts and wasted attempts for each, the makespan ratio (goal: staging <= 0.5x direct,
with zero conflicts) and checks both targets hold the same rows.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from typing import Any

from _common import now, session

SCHEMA = "id INT, part STRING, value INT, updated_at INT"
KEYS = ["id", "part"]
LATEST = [{"action": "update", "condition": "t.`updated_at` IS NULL OR s.`updated_at` >= t.`updated_at`"}]


def source_rows(writer: int, rows: int) -> list[list[Any]]:
    own = [[writer * 10_000 + i, "hot", writer, writer] for i in range(rows)]
    return [*own, [0, "hot", writer, writer]]  # key 0: every source updates it; the latest wins


def create(run_job: Any, spark: Any, table: str, schema: str, partition_by: list[str]) -> None:
    code, report = run_job(
        {
            "operation": "append",
            "table": table,
            "source": {"kind": "rows", "rows": [], "schema": schema},
            "options": {"partition_by": partition_by},
        },
        spark,
    )
    assert code == 0, report


def concurrently(k: int, job: Any) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = [{} for _ in range(k)]
    barrier = threading.Barrier(k)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = job(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(k)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def tally(reports: list[dict[str, Any]]) -> dict[str, Any]:
    attempts = [a for r in reports for a in r.get("attempts") or []]
    return {
        "failed": sum(1 for r in reports if r.get("status") not in ("committed", "skipped_duplicate")),
        "conflicts": sum(1 for a in attempts if a.get("conflict")),
        "wasted_attempts": sum(1 for a in attempts if a.get("conflict")),
        "wasted_s": sum(float(a.get("wasted_s") or 0.0) for a in attempts),
    }


def direct(spark: Any, run_job: Any, root: str, k: int, rows: int) -> dict[str, Any]:
    table = f"{root}/direct"
    create(run_job, spark, table, SCHEMA, ["part"])

    def merge(i: int) -> dict[str, Any]:
        spec = {
            "operation": "merge",
            "table": table,
            "source": {"kind": "rows", "rows": source_rows(i, rows), "schema": SCHEMA},
            "options": {"keys": KEYS, "dedup_order_by": "updated_at", "when_matched": LATEST},
            "commit_retry": {"max_attempts": 2 * k, "min_wait_s": 0.1, "max_wait_s": 5.0},
            "txn": {"app_id": f"bench/direct/{i}", "version": 1},
        }
        return run_job(spec, spark)[1]

    start = now()
    reports = concurrently(k, merge)
    return {"makespan_s": now() - start, **tally(reports), "table": table}


def staged(spark: Any, run_job: Any, root: str, k: int, rows: int) -> dict[str, Any]:
    from airflow_provider_deltacc.task_groups.staging_batches import plan_batches_for

    staging, target = f"{root}/staging", f"{root}/staged"
    create(run_job, spark, staging, f"{SCHEMA}, `batch_id` STRING", ["batch_id"])
    create(run_job, spark, target, SCHEMA, ["part"])
    sources: list[str | dict[str, Any]] = [
        {"kind": "rows", "rows": source_rows(i, rows), "schema": SCHEMA} for i in range(k)
    ]
    plan = plan_batches_for(sources, staging_table=staging, batch_prefix="bench/staged/run-1")

    def append(i: int) -> dict[str, Any]:
        spec = {
            "operation": "append",
            "table": staging,
            "source": plan["appends"][i],
            "options": {"create_if_missing": False},
            "txn": {"app_id": f"bench/staged/append/{i}", "version": 1},
        }
        return run_job(spec, spark)[1]

    start = now()
    reports = concurrently(k, append)
    merge = {
        "operation": "merge",
        "table": target,
        "source": plan["merge_source"],
        "options": {"keys": KEYS, "dedup_order_by": "updated_at", "when_matched": LATEST},
        "txn": {"app_id": "bench/staged/merge", "version": 1},
    }
    reports.append(run_job(merge, spark)[1])
    cleanup = {
        "operation": "delete",
        "table": staging,
        "options": {"partition_values": plan["cleanup_partitions"]},
        "txn": {"app_id": "bench/staged/cleanup", "version": 1},
    }
    reports.append(run_job(cleanup, spark)[1])
    return {"makespan_s": now() - start, **tally(reports), "table": target}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=8, help="sources (default 8)")
    parser.add_argument("--rows", type=int, default=50, help="own rows per source (default 50)")
    args = parser.parse_args()

    from airflow_provider_deltacc.spark_job.main import run_job

    spark = session("bench-patterns")
    spark.sparkContext.setLogLevel("ERROR")
    root = tempfile.mkdtemp(prefix="bench-patterns-")
    create(run_job, spark, f"{root}/warmup", SCHEMA, ["part"])  # JIT and Delta class loading, not measured
    results = {
        "direct": direct(spark, run_job, root, args.k, args.rows),
        "staging": staged(spark, run_job, root, args.k, args.rows),
    }
    print(f"K={args.k} sources, {args.rows + 1} rows each, all into one partition")
    print(
        f"{'pattern':<10}{'makespan_s':>12}{'conflicts':>11}{'wasted_attempts':>17}{'wasted_s':>10}{'failed':>8}"
    )
    for name, r in results.items():
        print(
            f"{name:<10}{r['makespan_s']:>12.2f}{r['conflicts']:>11}{r['wasted_attempts']:>17}"
            f"{r['wasted_s']:>10.2f}{r['failed']:>8}"
        )
    ratio = results["staging"]["makespan_s"] / results["direct"]["makespan_s"]
    goal = ratio <= 0.5 and results["staging"]["conflicts"] == 0
    print(
        f"makespan ratio staging/direct = {ratio:.2f} "
        f"(goal <= 0.50 with zero conflicts: {'met' if goal else 'NOT met'})"
    )
    tables = [
        sorted(tuple(r) for r in spark.read.format("delta").load(results[n]["table"]).collect())
        for n in ("direct", "staging")
    ]
    print(f"both targets hold the same {len(tables[0])} rows: {tables[0] == tables[1]}")


if __name__ == "__main__":
    main()
