"""PySpark tasks: the provider's decorated-task path against an unprotected ``@task.pyspark``-style task.

    .venv/bin/python bench/pyspark_tasks.py [--rounds 7] [--warmup 4] [--writers 8] [--contention-rounds 2]

Side by side in one run, on one Delta-enabled Spark Connect server this script starts
(``deltacc-connect-server``, ``local[2]``), every task opening a Connect session of its own:

1. **One writer.** A MERGE of a small DataFrame (10 rows into a 100-row table, keyed on ``id``) built by a
   PySpark function:

   - ``provider``: what ``@task.delta_merge`` in ``spark_connect`` mode runs: the spec with the function as
     its source (``{"kind": "callable", ...}``) and its exactly-once identity, inside
     :func:`~airflow_provider_deltacc.turns.guarded_write` (the Delta log asked first, the write lease from
     a SQLite lease store, the writer's turn), then ``DeltaCCHook(execution_mode="spark_connect").run``;
   - ``unprotected``: the same function and the same MERGE in SQL on a session of its own, no retries: what a
     ``@task.pyspark`` task does.

   Rounds alternate the order of the two; medians and the ratio provider/unprotected (goal <= 1.10).

2. **K concurrent read-modify-writes.** K writers (threads, started at a barrier) each read the balance of
   a one-row table eagerly (``collect()``) and MERGE it back plus its amount (distinct powers of two, so a
   lost update is known by its amount): through the provider with turns (every writer must commit exactly
   once; wasted attempts from the reports, goal <= K), and unprotected (failures are the exceptions; lost
   updates are what the writers that did not fail should have added, minus what the balance grew by).

The Connect server gets ``--warmup`` untimed runs of both single-writer paths first (a cold server's first
runs are much slower while its JIT compiles). Tables keep Delta's default checkpoint interval. The server and
the temporary directories are removed at the end.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _common import median, now
from latency import start_connect_server

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CONN_ID = "bench_pyspark_connect"
ROWS_SCHEMA = "id BIGINT, value STRING"
ACCOUNTS_SCHEMA = "account STRING, balance BIGINT"
ACCOUNT = "main"
TABLE_ROWS = 100
SOURCE_ROWS = 10
SINGLE_GOAL = 1.10


def small_frame(spark: SparkSession, version: int) -> DataFrame:
    """The single writer's source: 10 rows, 9 of them updates and one new id per version."""
    rows = [(i * 11, f"v{version}") for i in range(SOURCE_ROWS - 1)] + [(TABLE_ROWS + version, f"v{version}")]
    return spark.createDataFrame(rows, ROWS_SCHEMA)


def add_to_balance(spark: SparkSession, table: str, amount: int) -> DataFrame:
    """A read-modify-write source: the balance read eagerly on the driver, plus ``amount``."""
    balance = spark.read.format("delta").load(table).where(f"account = '{ACCOUNT}'").collect()[0]["balance"]
    return spark.createDataFrame([(ACCOUNT, balance + amount)], ACCOUNTS_SCHEMA)


def connect_url() -> str:
    return "sc://" + os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"].split("://", 1)[1]


def provider_write(
    table: str, function: Any, kwargs: dict[str, Any], keys: list[str], txn: tuple[str, int], lease_db: Path
) -> dict[str, Any]:
    """What a decorated Delta task in ``spark_connect`` mode runs between its start and its XCom push.

    :returns: the commit report (raises a classified exception when the write did not succeed).
    """
    from airflow_provider_deltacc.contract.source_function import SourceFunction
    from airflow_provider_deltacc.contract.storage_safety import spark_storage_safety
    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
    from airflow_provider_deltacc.leases import SqliteLeaseStore
    from airflow_provider_deltacc.turns import WriteGuard, guarded_write

    logging.getLogger("airflow_provider_deltacc").setLevel(logging.WARNING)  # conflicts and errors only
    app_id, version = txn
    spec = {
        "operation": "merge",
        "table": table,
        "source": {"kind": "callable", "function": SourceFunction(function, kwargs=kwargs)},
        "options": {"keys": keys},
        "txn": {"app_id": app_id, "version": version},
    }
    hook = DeltaCCHook(execution_mode="spark_connect", conn_id=CONN_ID, job_name="bench-pyspark")
    guard = WriteGuard(holder=f"bench.{app_id}/{version}", ttl_s=60.0, turn_wait_timeout_s=600.0)
    with guarded_write(
        hook.job_spec(spec),
        guard,
        verdict=spark_storage_safety(Table(table), {}),
        open_store=lambda: SqliteLeaseStore(lease_db),
        consult_log=hook.consult_log,
    ) as write:
        return write.run(partial(hook.run, consult_log=False), loop_takes_turns=hook.loop_runs_here)


def unprotected_write(table: str, function: Any, kwargs: dict[str, Any], key: str) -> None:
    """What a ``@task.pyspark`` task does: its own session, the function, one MERGE in SQL, no retries."""
    from airflow_provider_deltacc.hooks.connect import new_connect_session

    spark = new_connect_session(connect_url())
    try:
        function(spark=spark, **kwargs).createOrReplaceTempView("source")
        spark.sql(
            f"MERGE INTO delta.`{table}` AS t USING source AS s ON t.{key} = s.{key} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
    finally:
        spark.stop()


def create_table(table: str, rows: list[tuple[Any, ...]], schema: str) -> None:
    """A Delta table of ``rows``, with Delta's default settings (a checkpoint every 10 commits)."""
    from airflow_provider_deltacc.hooks.connect import new_connect_session

    spark = new_connect_session(connect_url())
    try:
        spark.sql(f"CREATE TABLE delta.`{table}` ({schema}) USING delta")
        spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(table)
    finally:
        spark.stop()


def single_writer(work: Path, rounds: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per write of both paths, ``rounds`` each after ``warmup`` untimed ones, order alternating."""
    tables = {path: str(work / f"single-{path}") for path in ("provider", "unprotected")}
    for table in tables.values():
        create_table(table, [(i, "seed") for i in range(TABLE_ROWS)], ROWS_SCHEMA)
    lease_db = work / "leases.db"

    def run(path: str, version: int) -> float:
        start = now()
        if path == "provider":
            report = provider_write(
                tables[path], small_frame, {"version": version}, ["id"], ("bench/single", version), lease_db
            )
            assert report["status"] == "committed", report
        else:
            unprotected_write(tables[path], small_frame, {"version": version}, "id")
        return now() - start

    for version in range(1, warmup + 1):
        run("provider", version)
        run("unprotected", version)
    print(f"single writer: {warmup} untimed runs of each path done", flush=True)
    samples: dict[str, list[float]] = {"provider": [], "unprotected": []}
    for r in range(rounds):
        order = ("provider", "unprotected") if r % 2 == 0 else ("unprotected", "provider")
        for path in order:
            samples[path].append(run(path, 100 + r))
        print(
            f"  round {r + 1}/{rounds}: provider {samples['provider'][-1]:.2f}s, "
            f"unprotected {samples['unprotected'][-1]:.2f}s",
            flush=True,
        )
    return samples


def read_balance(table: str) -> tuple[int, int]:
    """The balance and the table's version, read with delta-rs."""
    from deltalake import DeltaTable

    dt = DeltaTable(table)
    rows = dt.to_pyarrow_table().to_pylist()
    return sum(int(row["balance"]) for row in rows if row["account"] == ACCOUNT), dt.version()


def error_kind(exc: Exception) -> str:
    """The exception's type and Spark error class (``[DELTA_CONCURRENT_APPEND...]``) when it names one."""
    match = re.search(r"\[([A-Z][A-Z0-9_.]+)\]", str(exc))
    return type(exc).__name__ + (f" [{match.group(1)}]" if match else f": {str(exc).splitlines()[0][:120]}")


def merge_commits_after(table: str, version: int) -> int:
    from deltalake import DeltaTable

    return sum(1 for h in DeltaTable(table).history() if h["version"] > version and h["operation"] == "MERGE")


def contention(work: Path, path: str, writers: int, round_no: int) -> dict[str, Any]:
    """K writers racing on one balance through ``path``; what happened."""
    table = str(work / f"balance-{path}-{round_no}")
    create_table(table, [(ACCOUNT, 0)], ACCOUNTS_SCHEMA)
    lease_db = work / f"leases-{round_no}.db"
    amounts = [2**i for i in range(writers)]
    outcomes: dict[int, Any] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(writers)

    def writer(amount: int) -> None:
        kwargs = {"table": table, "amount": amount}
        barrier.wait()
        try:
            if path == "provider":
                txn = (f"bench/rmw-{amount}", round_no)
                outcome: Any = provider_write(table, add_to_balance, kwargs, ["account"], txn, lease_db)
            else:
                unprotected_write(table, add_to_balance, kwargs, "account")
                outcome = None
        except Exception as exc:
            outcome = exc
        with lock:
            outcomes[amount] = outcome

    before, version = read_balance(table)
    start = now()
    threads = [threading.Thread(target=writer, args=(amount,)) for amount in amounts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    makespan = now() - start
    after, _ = read_balance(table)
    failed = sorted(a for a, o in outcomes.items() if isinstance(o, Exception))
    done = [a for a in amounts if a not in failed]
    expected = before + sum(done)
    deficit = expected - after
    lost = [a for a in done if deficit & a] if deficit > 0 else []
    attempts = [a for o in outcomes.values() if isinstance(o, dict) for a in o.get("attempts") or []]
    errors = Counter(error_kind(o) for o in outcomes.values() if isinstance(o, Exception))
    return {
        "path": path,
        "round": round_no,
        "committed": len(done),
        "failed": len(failed),
        "wasted": len(failed)
        if path == "unprotected"
        else sum(1 for a in attempts if a.get("outcome") != "committed"),
        "conflicts": sum(1 for a in attempts if a.get("conflict")),
        "lost": lost,
        "off": deficit if deficit < 0 or sum(lost) != deficit else 0,
        "balance": after - before,
        "expected": sum(done),
        "merges": merge_commits_after(table, version),
        "makespan": makespan,
        "errors": errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed single-writer rounds of each path")
    parser.add_argument("--warmup", type=int, default=4, help="untimed single-writer runs of each path first")
    parser.add_argument("--writers", type=int, default=8, help="concurrent read-modify-write writers")
    parser.add_argument("--contention-rounds", type=int, default=2, help="concurrent rounds of each path")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-pyspark-tasks-"))
    os.environ["AIRFLOW_HOME"] = str(work / "airflow-home")
    server, port = start_connect_server(work)
    os.environ[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = f"spark-connect://127.0.0.1:{port}"
    try:
        return run(work, args)
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except Exception:
            server.kill()
        shutil.rmtree(work, ignore_errors=True)


def run(work: Path, args: argparse.Namespace) -> int:
    started = now()
    samples = single_writer(work, args.rounds, args.warmup)
    rows = []
    for r in range(1, args.contention_rounds + 1):
        for path in ("provider", "unprotected") if r % 2 else ("unprotected", "provider"):
            rows.append(contention(work, path, args.writers, r))
            print(f"  contention round {r} {path} done", flush=True)

    med = {path: median(values) for path, values in samples.items()}
    ratio = med["provider"] / med["unprotected"]
    print(f"\n1. one writer, MERGE of {SOURCE_ROWS} rows into {TABLE_ROWS} (median of {args.rounds} rounds)")
    for path, values in samples.items():
        print(f"  {path:<12} {med[path]:6.2f}s  (min {min(values):.2f}, max {max(values):.2f})")
    verdict = "met" if ratio <= SINGLE_GOAL else f"MISSED by {ratio / SINGLE_GOAL:.2f}x"
    print(f"  provider / unprotected: {ratio:.2f}x (goal <= {SINGLE_GOAL:.2f}) {verdict}")

    k = args.writers
    print(f"\n2. {k} concurrent read-modify-writes (eager collect of one balance, MERGE back +amount)")
    header = f"  {'path':<12}{'round':>6}{'committed':>11}{'failed':>8}{'conflicts':>11}{'wasted':>8}"
    print(
        header
        + f"{'MERGE commits':>15}{'balance +':>11}{'expected':>10}  {'lost updates':<24}{'makespan':>9}"
    )
    ok = True
    for row in rows:
        lost = f"{len(row['lost'])} ({', '.join(f'+{a}' for a in row['lost'])})" if row["lost"] else "0"
        if row["off"]:
            lost += f", off by {-row['off']:+d}"
        print(
            f"  {row['path']:<12}{row['round']:>6}{row['committed']:>8}/{k:<2}{row['failed']:>8}"
            f"{row['conflicts']:>11}{row['wasted']:>8}{row['merges']:>15}{row['balance']:>11}"
            f"{row['expected']:>10}  {lost:<24}{row['makespan']:>8.1f}s"
        )
        if row["path"] == "provider":
            ok = ok and row["committed"] == k and row["merges"] == k and not row["lost"] and not row["off"]
            ok = ok and row["wasted"] <= k
    for row in rows:
        for error, count in sorted(row["errors"].items()):
            print(f"  {row['path']} round {row['round']}: {count} x {error}")
    print(
        f"  provider with turns: every writer committed exactly once with <= {k} wasted attempts: "
        f"{'met' if ok else 'MISSED'}"
    )
    print(f"\ntotal {now() - started:.0f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
