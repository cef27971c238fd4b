"""Concurrent chaos transfers with and without interpreted expressions, side by side in one JVM.

Eight writer threads run the bounded chaos run's MERGE transfers (``tests/chaos/workload.transfer_spec``,
through ``run_job`` and the commit loop) on one table, in rounds that alternate the job conf: Spark's default
(expressions compiled to Java code) and ``spark.sql.codegen.factoryMode=NO_CODEGEN`` (interpreted), which
the chaos workload uses. Alternating rounds in one JVM keeps JIT warm-up and box load from favouring either.

Prints the seconds per transfer of each round, the JVM's CPU per transfer, and the median ratio
interpreted/compiled (below 1 means the interpreted jobs are cheaper).
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import tempfile
import threading
import time
from typing import Any

from _common import median, session  # also puts the repository root on sys.path

INTERPRETED = {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
COMPILED = {"spark.sql.codegen.factoryMode": "FALLBACK"}


def jvm_cpu_seconds() -> float:
    """CPU seconds of this process's children (the local Spark driver JVM)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def run_round(spark: Any, accounts: str, transfers: list[Any], conf: dict[str, str], writers: int) -> float:
    """Run the transfers with ``writers`` threads; return the wall seconds."""
    from airflow_provider_deltacc.spark_job.main import run_job
    from tests.chaos.workload import transfer_spec

    work: queue.Queue[Any] = queue.Queue()
    for transfer in transfers:
        work.put(transfer)
    failures: list[str] = []

    def writer() -> None:
        while True:
            try:
                transfer = work.get_nowait()
            except queue.Empty:
                return
            spec = transfer_spec(accounts, transfer)
            code, report = run_job({**spec, "spark_conf": {**spec["spark_conf"], **conf}}, spark)
            if code != 0:
                failures.append(str(report.get("summary")))

    started = time.perf_counter()
    threads = [threading.Thread(target=writer) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"{len(failures)} transfers failed, e.g. {failures[0]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each variant")
    parser.add_argument("--transfers", type=int, default=32, help="transfers per round")
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # each retried conflict logs a WARNING line otherwise
    logging.getLogger("airflow_provider_deltacc").setLevel(logging.ERROR)

    from airflow_provider_deltacc.spark_job.main import run_job
    from tests.chaos.workload import ACCOUNTS_SCHEMA, ChaosConfig, initial_accounts, plan

    spark = session("bench-transfers")
    accounts = os.path.join(tempfile.mkdtemp(prefix="bench-transfers-"), "accounts")
    cfg = ChaosConfig(
        branches=48,
        accounts_per_branch=3,
        transfers=args.transfers + 8,
        faults=0,
        process_kills=0,
        lease_kills=0,
    )
    code, report = run_job(
        {
            "operation": "append",
            "table": accounts,
            "source": {
                "kind": "rows",
                "schema": ACCOUNTS_SCHEMA,
                "rows": [list(r) for r in initial_accounts(cfg)],
            },
            "options": {"partition_by": ["branch"]},
        },
        spark,
    )
    assert code == 0, report
    planned = plan(cfg)
    # One warm-up round each, not measured.
    variants = {"compiled": COMPILED, "interpreted": INTERPRETED}
    for name, conf in variants.items():
        run_round(spark, accounts, [_renamed(t, f"warm-{name}") for t in planned[:8]], conf, args.writers)

    per_transfer: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    ratios: list[float] = []
    for n in range(args.rounds):
        order = list(variants) if n % 2 == 0 else list(reversed(variants))
        seconds: dict[str, float] = {}
        for name in order:
            batch = [_renamed(t, f"r{n}-{name}") for t in planned[: args.transfers]]
            cpu_before = jvm_cpu_seconds()
            seconds[name] = run_round(spark, accounts, batch, variants[name], args.writers) / len(batch)
            cpu[name].append((jvm_cpu_seconds() - cpu_before) / len(batch))
            per_transfer[name].append(seconds[name])
        ratios.append(seconds["interpreted"] / seconds["compiled"])
        print(
            f"round {n + 1}: compiled {seconds['compiled']:.2f} s/transfer, "
            f"interpreted {seconds['interpreted']:.2f} s/transfer"
        )
    for name in variants:
        print(
            f"{name:11s}: median {median(per_transfer[name]):.2f} s/transfer wall, "
            f"{median(cpu[name]):.2f} JVM CPU-s/transfer ({args.writers} writers)"
        )
    print(f"median interpreted/compiled = {median(ratios):.3f}")


def _renamed(transfer: Any, prefix: str) -> Any:
    from dataclasses import replace

    return replace(transfer, id=f"{prefix}-{transfer.id}")


if __name__ == "__main__":
    main()
