"""What S3 costs a Delta task, side by side with local disk in one run, and what the storage guard's
serialization costs concurrent writers.

    .venv/bin/python bench/object_storage.py [--rounds 3] [--merge-rows 1000] [--writers 8] [--modes ...]
                                             [--parts 1,2,3]

An S3 API server (moto's server mode) is started on 127.0.0.1; every S3 task reaches it through an Airflow
``aws`` connection (``aws_conn_id``), as a DAG would.

1. **Per task, per mode** (``spark_submit``, ``spark_connect``, ``in_process``): one ``DeltaCCHook.run`` of a
   1-row append and of a 1,000-row pinned MERGE, each with its own txn identity, on a local table and on an
   S3 table; rounds rotate the order. Prints medians and the ratio S3/local.
2. **Concurrent writers**: ``--writers`` appends (operators, ``in_process``, one thread each, one lease store)
   into one S3 table with the provider's put-if-absent log store (the writers run side by side; a lost race
   for a version is a 412 and Delta's retry at the next one), against the same number of writers into as many
   S3 tables (nothing to race for), and beside them the same writers into one S3 table with that log store
   turned off, which the storage guard serializes (Delta's own S3 log store cannot keep drivers apart).
   Prints commits per second of each and the ratios to the independent tables.
3. **delta-rs on S3**: the same number of concurrent delta-rs appends into one S3 table with no lock at all
   (delta-rs commits with S3 conditional writes, ``If-None-Match``, which moto's server honours); prints
   whether every append landed, and the commits per second.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import ROOT, median, mode_hook, now
from latency import append_spec, merge_spec, start_connect_server

sys.path.insert(0, str(ROOT))
from tests.support.s3_server import S3Server
from tests.support.spark_standalone import _free_port

MODES = ("spark_submit", "spark_connect", "in_process")
SUBMIT_CONN = "bench_s3_submit"
CONNECT_CONN = "bench_s3_connect"
AWS_CONN = "bench_s3"


def _hook(mode: str, s3: bool) -> Any:
    return mode_hook(
        mode,
        job_name="bench-object-storage",
        submit_conn=SUBMIT_CONN,
        connect_conn=CONNECT_CONN,
        aws_conn_id=AWS_CONN if s3 else None,
    )


def _run(mode: str, table: str, spec: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    s3 = table.startswith("s3a://")
    if s3:  # one writer at a time here, which is what the guard's exclusive lease makes sure of in a DAG
        spec = {**spec, "storage_guard": "exclusive_lease"}
    start = now()
    report = _hook(mode, s3).run(spec)
    return now() - start, report


def per_task(server: S3Server, work: Path, rounds: int, merge_rows: int, modes: tuple[str, ...]) -> None:
    bucket = server.new_bucket("bench")
    tables = {
        (mode, where): (f"{root}/{mode}-append", f"{root}/{mode}-merge")
        for mode in modes
        for where, root in (("local", str(work)), ("s3", f"s3a://{bucket}"))
    }
    for (_mode, _where), (append_table, merge_table) in tables.items():  # set-up through the in-process JVM
        _run("in_process", append_table, append_spec(append_table, "seed", 1))
        seed = merge_spec(merge_table, "seed", 1, merge_rows)
        seed["operation"], seed["options"] = "append", {"partition_by": ["day"]}
        _run("in_process", merge_table, seed)
    for (mode, _where), (append_table, merge_table) in tables.items():  # warm the long-lived JVMs
        if mode != "spark_submit":
            for version in (2, 3):
                _run(mode, append_table, append_spec(append_table, "warm", version))
                _run(mode, merge_table, merge_spec(merge_table, "warm", version, merge_rows))
    samples: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    keys = list(tables)
    for r in range(rounds):
        for mode, where in keys[r % len(keys) :] + keys[: r % len(keys)]:
            append_table, merge_table = tables[(mode, where)]
            seconds, report = _run(mode, append_table, append_spec(append_table, "timed", 100 + r))
            assert report["status"] == "committed", report
            samples[(mode, where, "append")].append(seconds)
            seconds, report = _run(mode, merge_table, merge_spec(merge_table, "timed", 100 + r, merge_rows))
            assert report["status"] == "committed", report
            samples[(mode, where, "merge")].append(seconds)
    print(f"\n1. One task, median of {rounds} rounds (s)")
    print(f"{'mode':<14} {'op':<7} {'local':>8} {'s3':>8} {'s3/local':>9}")
    for mode in modes:
        for op in ("append", "merge"):
            local, s3 = median(samples[(mode, "local", op)]), median(samples[(mode, "s3", op)])
            print(f"{mode:<14} {op:<7} {local:8.2f} {s3:8.2f} {s3 / local:8.2f}x")


def concurrent_writers(server: S3Server, work: Path, writers: int) -> None:
    from airflow_provider_deltacc.operators import DeltaAppendOperator
    from airflow_provider_deltacc.spark_jars.put_if_absent import SWITCH_CONF
    from tests.integration.object_storage.side_by_side import run_side_by_side, statuses

    def operators(tables: list[str], store: str, conf: dict[str, str]) -> list[Any]:
        return [
            DeltaAppendOperator(
                task_id=f"writer_{i}",
                table=tables[i % len(tables)],
                source={
                    "kind": "rows",
                    "rows": [[i, "2026-11-20", "w"]],
                    "schema": "id BIGINT, day STRING, value STRING",
                },
                create_if_missing=True,
                execution_mode="in_process",
                aws_conn_id=AWS_CONN,
                lease_store_url=f"sqlite:///{work / store}",
                unsafe_storage_wait_timeout=900.0,
                spark_conf=conf,
            )
            for i in range(writers)
        ]

    results = {}
    runs = (
        ("warm-up (not timed)", writers, {}),  # the JVM's first S3 writes pay class loading and connections
        ("one table, put-if-absent", 1, {}),
        (f"{writers} tables", writers, {}),
        ("one table, serialized", 1, {SWITCH_CONF: "false"}),
    )
    for label, count, conf in runs:
        bucket = server.new_bucket("writers")
        tables = [f"s3a://{bucket}/t{i}" for i in range(count)]
        for table in tables:  # created first, so every writer below appends
            _run("in_process", table, append_spec(table, "seed", 1))
        start = now()
        outcomes = run_side_by_side(operators(tables, f"leases-{label[:3]}-{count}.db", conf), timeout_s=900)
        seconds = now() - start
        assert set(statuses(outcomes).values()) == {"committed"}, outcomes
        guards = {o.get("storage_safety", {}).get("guard") for o in outcomes.values()}
        results[label] = writers / seconds
        print(
            f"   {label:<26} {writers} commits in {seconds:6.1f} s: {writers / seconds:5.2f} commits/s "
            f"(storage guard: {', '.join(sorted(str(g) for g in guards))})"
        )
    _warm, shared, many, serialized = results.values()
    print(f"   one table, put-if-absent / {writers} tables: {shared / many:.2f}x the commit rate")
    print(f"   one table, serialized / {writers} tables: {serialized / many:.2f}x the commit rate")


def delta_rs_writers(server: S3Server, writers: int) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    uri = f"s3://{server.new_bucket('deltars')}/t"
    options = server.storage_options()
    write_deltalake(uri, pa.table({"w": [-1]}), storage_options=options)
    errors: list[str] = []

    def append(i: int) -> None:
        try:
            write_deltalake(uri, pa.table({"w": [i]}), mode="append", storage_options=options)
        except Exception as exc:  # reported below
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=append, args=(i,)) for i in range(writers)]
    start = now()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = now() - start
    table = DeltaTable(uri, storage_options=options)
    landed = sorted(r["w"] for r in table.to_pyarrow_table().to_pylist() if r["w"] >= 0)
    print(
        f"\n3. delta-rs: {writers} concurrent appends into one S3 table, no lock: {len(landed)} landed, "
        f"version {table.version()}, {len(errors)} errors, {writers / seconds:.1f} commits/s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--merge-rows", type=int, default=1000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--parts", default="1,2,3", help="which parts to run, e.g. 2")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    work = Path(tempfile.mkdtemp(prefix="bench-object-storage-"))
    os.environ.setdefault("DELTACC_LEASE_STORE_URL", f"sqlite:///{work / 'leases.db'}")
    server = S3Server(port=_free_port(), log=work / "moto.log")
    server.start()
    connect, port = start_connect_server(work) if "1" in parts else (None, 0)
    os.environ[f"AIRFLOW_CONN_{AWS_CONN.upper()}"] = server.connection_uri()
    os.environ[f"AIRFLOW_CONN_{SUBMIT_CONN.upper()}"] = json.dumps({"conn_type": "spark", "host": "local[2]"})
    os.environ[f"AIRFLOW_CONN_{CONNECT_CONN.upper()}"] = f"spark-connect://127.0.0.1:{port}"
    try:
        if "1" in parts:
            per_task(server, work, args.rounds, args.merge_rows, tuple(args.modes.split(",")))
        if "2" in parts:
            print(f"\n2. {args.writers} concurrent writers (operators, in_process), S3")
            concurrent_writers(server, work, args.writers)
        if "3" in parts:
            delta_rs_writers(server, args.writers)
    finally:
        if connect is not None:
            connect.terminate()
            connect.wait(timeout=60)
        server.halt()
    return 0


if __name__ == "__main__":
    sys.exit(main())
