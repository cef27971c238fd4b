"""How the provider's own reads of a table's Delta log grow with its history and its files (no JVM).

    .venv/bin/python bench/scale.py [--commits 100,1000,10000] [--files 1000,100000] [--rounds 7] [--spark]

Before any Spark starts, a task reads the table's Delta log with delta-rs in the Airflow worker. This bench
builds local tables with delta-rs, as Delta writes them (a checkpoint every 10 commits, Delta's default
``checkpointInterval``), and times those reads side by side in one run, alternating the tables every round:

- ``duplicate``: the task run again after its write committed long ago (its txn identity is in the table's
  second commit): the log answers ``skipped_duplicate`` and looks for the commit that recorded it among the
  newest ``TXN_SCAN_VERSIONS`` commits (:func:`~airflow_provider_deltacc.delta_log.fast_path.consult_log`);
- ``new write``: a write whose txn identity is not recorded: the log is read and Spark would run;
- ``table facts``: the partition columns and properties the lease and the gate read
  (:func:`~airflow_provider_deltacc.windows.table_facts.read_table_facts`);
- ``partitions``: the table's partitions, the scope of a whole-table lease
  (:func:`~airflow_provider_deltacc.windows.table_facts.table_partitions`).

With ``--spark``, the commit tables are also written through ``DeltaCCHook`` in ``spark_connect`` mode (a
Connect server this script starts), as a task would, alternating the tables every round: a 1-row append and a
MERGE pinned to one partition, each under a new txn identity. Printed: the task's wall time and the
provider's own share of it (the wall time less its attempts' Spark time: the log read, the fast path, the
report, the commit search), each against the smallest table.

Tables: ``--commits`` 1-row appends (one file each), and ``--files`` files in one commit (written as add
actions of files that do not exist: only the log is read here, and it is the same log). Prints medians,
each table against the smallest, and the goals of issue 25: the largest history within 1.2x of the smallest,
and the duplicate answered in under 0.2 s at 10,000 commits.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import median, now

SCHEMA = "id BIGINT, p STRING"
RERUN_APP = "bench/scale/rerun"
WRITER_APP = "bench/scale/writer"
CHECKPOINT_INTERVAL = 10


def _rows(i: int) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array([i], pa.int64()), "p": pa.array([f"p{i % 4}"], pa.string())})


def history_table(path: Path, commits: int) -> str:
    """A table of ``commits`` 1-row appends (``commits`` >= 2), the second one recording ``RERUN_APP``."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    for i in range(commits):
        app = RERUN_APP if i == 1 else WRITER_APP
        properties = CommitProperties(app_transactions=[Transaction(app_id=app, version=i)])
        write_deltalake(str(path), _rows(i), mode="append", partition_by=["p"], commit_properties=properties)
        if (i + 1) % CHECKPOINT_INTERVAL == 0:
            DeltaTable(str(path)).create_checkpoint()
    return str(path)


def files_table(path: Path, files: int) -> str:
    """A table whose third commit adds ``files`` files (2 real commits first, the second recording
    ``RERUN_APP``), checkpointed after it."""
    from deltalake import DeltaTable

    history_table(path, 2)
    stamp = int(time.time() * 1000)
    adds = (
        {
            "add": {
                "path": f"p=p{i % 4}/part-{i:06d}-synthetic.parquet",
                "partitionValues": {"p": f"p{i % 4}"},
                "size": 512,
                "modificationTime": stamp,
                "dataChange": True,
            }
        }
        for i in range(files)
    )
    info = {
        "commitInfo": {"timestamp": stamp, "operation": "WRITE", "operationParameters": {"mode": "Append"}}
    }
    log = path / "_delta_log" / f"{2:020d}.json"
    with log.open("w", encoding="utf-8") as out:
        out.write(json.dumps(info) + "\n")
        for add in adds:
            out.write(json.dumps(add) + "\n")
    DeltaTable(str(path)).create_checkpoint()
    return str(path)


def _spec(table: str, app_id: str, version: int) -> Any:
    from airflow_provider_deltacc.spark_job.spec import parse_spec

    return parse_spec(
        {
            "operation": "append",
            "table": table,
            "source": {"kind": "rows", "rows": [[1, "p0"]], "schema": SCHEMA},
            "options": {"partition_by": ["p"]},
            "txn": {"app_id": app_id, "version": version},
        }
    )


def measurements(table: str) -> dict[str, Any]:
    """What one round times on ``table``: name -> a call that checks its own answer."""
    from airflow_provider_deltacc.delta_log.fast_path import consult_log
    from airflow_provider_deltacc.windows.table_facts import read_table_facts, table_partitions

    rerun, new = _spec(table, RERUN_APP, 1), _spec(table, "bench/scale/new", 1)

    def duplicate() -> None:
        report = consult_log(rerun).report
        assert report is not None and report["status"] == "skipped_duplicate", report
        # The commit that recorded it is searched for among the newest TXN_SCAN_VERSIONS commits only.
        assert report["metrics"].get("committed_version") in (1, None), report["metrics"]

    def new_write() -> None:
        answer = consult_log(new)
        assert answer.report is None and answer.unrecorded_at is not None

    def facts() -> None:
        found = read_table_facts(table)
        assert found is not None and found.partition_columns == ("p",)

    def partitions() -> None:
        assert len(table_partitions(table)) == 4

    return {"duplicate": duplicate, "new write": new_write, "table facts": facts, "partitions": partitions}


CONNECT_CONN = "bench_scale_connect"


def spark_specs(table: str, version: int) -> dict[str, dict[str, Any]]:
    """A round's writes on ``table``: a 1-row append and a MERGE pinned to ``p=p0``, new txn identities."""
    txn = {"app_id": "bench/scale/spark", "version": version}
    return {
        "append": {
            "operation": "append",
            "table": table,
            "source": {"kind": "rows", "rows": [[10_000_000 + version, "p1"]], "schema": SCHEMA},
            "txn": {**txn, "app_id": "bench/scale/spark-append"},
        },
        "pinned MERGE": {
            "operation": "merge",
            "table": table,
            "source": {"kind": "rows", "rows": [[0, "p0"]], "schema": SCHEMA},
            "options": {"keys": ["id", "p"], "partition_pin": "keyed"},
            "txn": {**txn, "app_id": "bench/scale/spark-merge"},
        },
    }


def spark_rounds(tables: dict[str, str], rounds: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(wall, own share) of each write on each table, every round, through a Connect server."""
    import os

    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
    from tests.support.spark_connect import running_connect_server

    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="deltacc-bench-scale-connect-") as work,
        running_connect_server(Path(work)) as server,
    ):
        os.environ[f"AIRFLOW_CONN_{CONNECT_CONN.upper()}"] = server.conn_uri
        hook = DeltaCCHook(conn_id=CONNECT_CONN, execution_mode="spark_connect", job_name="bench-scale")
        for round_ in range(rounds + 1):  # round 0 warms the server and the client up, untimed
            order = list(tables) if round_ % 2 == 0 else list(reversed(tables))
            for name in order:
                for what, spec in spark_specs(tables[name], round_ + 1).items():
                    began = now()
                    report = hook.run(spec)
                    wall = now() - began
                    assert report["status"] == "committed", report
                    spark_s = sum(float(a.get("duration_s") or 0.0) for a in report.get("attempts") or [])
                    if round_:
                        found.setdefault((name, what), []).append((wall, wall - spark_s))
    return found


def print_spark(found: dict[tuple[str, str], list[tuple[float, float]]], names: list[str]) -> None:
    whats = list(dict.fromkeys(what for _, what in found))
    print(
        "\nthrough Spark Connect, median ms (x: against the smallest table): wall / the provider's own share"
    )
    print(f"  {'table':<18}" + "".join(f"{w + ' wall':>24}{w + ' own':>24}" for w in whats))
    for name in names:
        cells = []
        for what in whats:
            for column in (0, 1):
                value = median([t[column] for t in found[(name, what)]])
                ratio = value / median([t[column] for t in found[(names[0], what)]])
                cells.append(f"{value * 1000:9.1f} ({ratio:5.2f}x)")
        print(f"  {name:<18}" + "".join(f"{c:>24}" for c in cells))
    if len(names) > 1:
        print(f"goal: the provider's own share at {names[-1]} within 1.2x of {names[0]}:")
        for what in whats:
            ratio = median([t[1] for t in found[(names[-1], what)]]) / median(
                [t[1] for t in found[(names[0], what)]]
            )
            print(f"  {what:<14} {ratio:5.2f}x {'met' if ratio <= 1.2 else 'MISSED'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--commits", default="100,1000,10000", help="history sizes, comma-separated")
    parser.add_argument("--files", default="1000,100000", help="file counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--spark", action="store_true", help="also write the commit tables through Spark")
    args = parser.parse_args()
    commits = [int(c) for c in args.commits.split(",") if c]
    files = [int(f) for f in args.files.split(",") if f]

    with tempfile.TemporaryDirectory(prefix="deltacc-bench-scale-") as tmp:
        tables: dict[str, str] = {}
        for count in commits:
            began = now()
            tables[f"{count:,} commits"] = history_table(Path(tmp) / f"commits-{count}", count)
            print(f"built {count:,} commits in {now() - began:.1f} s")
        for count in files:
            began = now()
            tables[f"{count:,} files"] = files_table(Path(tmp) / f"files-{count}", count)
            print(f"built {count:,} files in {now() - began:.1f} s")
        calls = {name: measurements(table) for name, table in tables.items()}
        times: dict[tuple[str, str], list[float]] = {}
        for table_calls in calls.values():  # once untimed: imports, first opens
            for call in table_calls.values():
                call()
        for round_ in range(args.rounds):
            order = list(calls) if round_ % 2 == 0 else list(reversed(calls))
            for name in order:
                for what, call in calls[name].items():
                    began = now()
                    call()
                    times.setdefault((name, what), []).append(now() - began)
        history = {f"{count:,} commits": tables[f"{count:,} commits"] for count in commits}
        spark = spark_rounds(history, args.rounds) if args.spark and history else None

    whats = list(next(iter(calls.values())))
    print(f"\nmedian of {args.rounds} rounds, ms (x: against the smallest table of its kind):")
    print(f"  {'table':<18}" + "".join(f"{w:>22}" for w in whats))
    for kind, sizes in (("commits", commits), ("files", files)):
        base = f"{sizes[0]:,} {kind}" if sizes else None
        for size in sizes:
            name = f"{size:,} {kind}"
            cells = []
            for what in whats:
                value = median(times[(name, what)])
                ratio = value / median(times[(base, what)]) if base else 1.0
                cells.append(f"{value * 1000:9.1f} ({ratio:5.2f}x)")
            print(f"  {name:<18}" + "".join(f"{c:>22}" for c in cells))
    if len(commits) > 1:
        small, large = f"{commits[0]:,} commits", f"{commits[-1]:,} commits"
        print(f"\ngoal: {large} within 1.2x of {small}:")
        for what in whats:
            ratio = median(times[(large, what)]) / median(times[(small, what)])
            print(f"  {what:<12} {ratio:5.2f}x {'met' if ratio <= 1.2 else 'MISSED'}")
    if 10000 in commits:
        value = median(times[("10,000 commits", "duplicate")])
        verdict = "met" if value < 0.2 else "MISSED"
        print(f"goal: duplicate under 0.2 s at 10,000 commits: {value:.3f} s {verdict}")
    if spark is not None:
        print_spark(spark, list(history))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
