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
  (:func:`~airflow_provider_deltacc.delta_log.table_facts.read_table_facts`);
- ``partitions``: the table's partitions, the scope of a whole-table lease
  (:func:`~airflow_provider_deltacc.delta_log.table_facts.table_partitions`).

With ``--spark``, the commit tables are also written through ``DeltaCCHook`` in ``spark_connect`` mode (a
Connect server this script starts), as a task would, alternating the tables every round: a 1-row append and a
MERGE pinned to one partition, each under a new txn identity. Printed: the task's wall time and the
provider's own share of it (the wall time less its attempts' Spark time: the log read, the fast path, the
report, the commit search), each against the smallest table.

Each read is timed three times in every round: through the provider's own log reader
(:mod:`airflow_provider_deltacc.delta_log.log_reader`) on the table as delta-rs leaves it (``reader``: no
checksum file, the checkpoint is read) and as delta-spark leaves it (``checksum``: a ``.crc`` beside every
commit, made from delta-rs's answers and the commits' txn actions for these delta-rs-built tables, in a twin
of the table made before any timing: :func:`with_checksums`), and through the delta-rs path the reader
replaced (``delta-rs``: the same calls with the reader made to fall back). Before timing, every
table's answers are compared with delta-rs's (version, protocol, metadata, schema, txn versions,
partitions, commit infos; with the checksums: the same but the commit infos).

Tables: ``--commits`` 1-row appends (one file each), and ``--files`` files in one commit (written as add
actions of files that do not exist: only the log is read here, and it is the same log); ``--tables DIR``
keeps them there and reuses them (the 10,000-commit table takes minutes to build). Prints medians, the
reader against delta-rs, each table against the smallest of its kind, and the goals of issue 42: every read
within 1.5x from the smallest to the largest history and within 2x from the smallest to the largest file
count, and the duplicate answered in under 50 ms at 10,000 commits.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import median, now

SCHEMA = "id BIGINT, p STRING"
RERUN_APP = "bench/scale/rerun"
WRITER_APP = "bench/scale/writer"
CHECKPOINT_INTERVAL = 10
#: delta-rs; the provider's log reader where the latest version has no checksum file (as delta-rs leaves a
#: table: the checkpoint is read); the same reader where it has one (as delta-spark leaves a table).
READERS = ("delta-rs", "reader", "checksum")


def _rows(i: int) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array([i], pa.int64()), "p": pa.array([f"p{i % 4}"], pa.string())})


def history_table(path: Path, commits: int, *, data: bool = False) -> str:
    """A table of ``commits`` 1-row appends (``commits`` >= 2), the second one recording ``RERUN_APP``.

    The first two are written by delta-rs, the rest are commit files in delta-rs's own form (commitInfo, add,
    txn): the same log, built in seconds (``write_deltalake`` loads the whole table for every append, hours
    for 10,000). With ``data`` each added file is written too (Parquet, for Spark to read); without, the adds
    name files that do not exist. delta-rs checkpoints it every ``CHECKPOINT_INTERVAL`` commits either way.
    """
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    for i in range(commits):
        if i < 2:
            app = RERUN_APP if i == 1 else WRITER_APP
            properties = CommitProperties(app_transactions=[Transaction(app_id=app, version=i)])
            write_deltalake(
                str(path), _rows(i), mode="append", partition_by=["p"], commit_properties=properties
            )
        else:
            _append_commit(path, i, data=data)
        if (i + 1) % CHECKPOINT_INTERVAL == 0:
            DeltaTable(str(path)).create_checkpoint()
    return str(path)


def _append_commit(path: Path, version: int, *, data: bool) -> None:
    """Commit ``version``: a 1-row append recording ``WRITER_APP``, of a file written when ``data`` (else of
    one that does not exist)."""
    stamp = int(time.time() * 1000)
    partition = f"p{version % 4}"
    file = f"p={partition}/part-{version:06d}-synthetic.parquet"
    size = 512
    if data:
        import pyarrow.parquet as pq

        (path / f"p={partition}").mkdir(exist_ok=True)
        pq.write_table(_rows(version).drop_columns(["p"]), path / file)  # a partition column is not stored
        size = (path / file).stat().st_size
    actions = [
        {
            "commitInfo": {
                "timestamp": stamp,
                "operation": "WRITE",
                "operationParameters": {"mode": "Append", "partitionBy": '["p"]'},
                "engineInfo": "delta-rs:py-bench",
                "operationMetrics": {"num_added_files": 1, "num_added_rows": 1},
            }
        },
        {
            "add": {
                "path": file,
                "partitionValues": {"p": partition},
                "size": size,
                "modificationTime": stamp,
                "dataChange": True,
                "stats": json.dumps(
                    {"numRecords": 1, "minValues": {"id": version}, "maxValues": {"id": version}}
                ),
            }
        },
        {"txn": {"appId": WRITER_APP, "version": version}},
    ]
    log = path / "_delta_log" / f"{version:020d}.json"
    log.write_text("".join(json.dumps(action) + "\n" for action in actions), encoding="utf-8")


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
    from airflow_provider_deltacc.contract.spec_parse import parse_spec

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
    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.delta_log.fast_path import consult_log
    from airflow_provider_deltacc.delta_log.table_facts import read_table_facts, table_partitions

    rerun, new = _spec(table, RERUN_APP, 1), _spec(table, "bench/scale/new", 1)

    def duplicate() -> None:
        report = consult_log(rerun).report
        assert report is not None and report["status"] == "skipped_duplicate", report
        # The commit that recorded it is searched for among the newest TXN_SCAN_VERSIONS commits only.
        assert report["metrics"].get("committed_version") in (1, None), report["metrics"]

    def new_write() -> None:
        answer = consult_log(new)
        assert (
            answer.report is None
            and answer.known_snapshot is not None
            and answer.known_snapshot.txn_unrecorded
        )

    def facts() -> None:
        found = read_table_facts(Table(table))
        assert found is not None and found.partition_columns == ("p",)

    def partitions() -> None:
        assert len(table_partitions(Table(table))) == 4

    return {"duplicate": duplicate, "new write": new_write, "table facts": facts, "partitions": partitions}


CONNECT_CONN = "bench_scale_connect"


def spark_specs(table: str, version: int) -> dict[str, dict[str, Any]]:
    """A round's writes on ``table``: a 1-row append, a MERGE pinned to ``p=p0``, and an UPDATE and a DELETE
    of ``p=p0`` whose condition no file's statistics let through (the provider's checks and Delta's
    planning, no rewrite), new txn identities."""
    txn = {"app_id": "bench/scale/spark", "version": version}
    nothing = {"condition": "id = -1", "partition_values": [{"p": "p0"}]}
    return {
        "UPDATE": {
            "operation": "update",
            "table": table,
            "options": {**nothing, "set": {"id": "id + 1"}},
            "txn": {**txn, "app_id": "bench/scale/spark-update"},
        },
        "DELETE": {
            "operation": "delete",
            "table": table,
            "options": nothing,
            "txn": {**txn, "app_id": "bench/scale/spark-delete"},
        },
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
        base = int(time.time() * 1000)  # txn versions above any an earlier run left in kept tables
        for round_ in range(rounds + 1):  # round 0 warms the server and the client up, untimed
            order = list(tables) if round_ % 2 == 0 else list(reversed(tables))
            for name in order:
                for what, spec in spark_specs(tables[name], base + round_).items():
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
        print(f"goal: the provider's own share at {names[-1]} within 1.5x of {names[0]}:")
        for what in whats:
            ratio = median([t[1] for t in found[(names[-1], what)]]) / median(
                [t[1] for t in found[(names[0], what)]]
            )
            print(f"  {what:<14} {ratio:5.2f}x {'met' if ratio <= 1.5 else 'MISSED'}")


@contextlib.contextmanager
def reading_with(reader: str, table: str) -> Iterator[None]:
    """Inside, the provider's reads of ``table`` go through ``reader``: ``reader`` (the log reader, the
    latest version's checksum file moved away, if the table has one), ``checksum`` (the log reader; ``table``
    is then the table's twin with checksums, :func:`with_checksums`) or ``delta-rs`` (the log reader made to
    fall back, as every read did before it)."""
    from airflow_provider_deltacc.contract.exceptions import UnsupportedLog
    from airflow_provider_deltacc.delta_log import log_reader

    if reader == "checksum":
        yield
        return
    if reader == "reader":
        checksum = latest_checksum(table)
        aside = checksum.with_name(checksum.name + ".bench-aside")
        if checksum.exists():
            checksum.rename(aside)
        try:
            yield
        finally:
            if aside.exists():
                aside.rename(checksum)
        return

    def fall_back(*_args: Any, **_kwargs: Any) -> Any:
        raise UnsupportedLog("bench: the delta-rs path")

    saved = log_reader.read_log_state, log_reader.read_commit_infos
    log_reader.read_log_state = log_reader.read_commit_infos = fall_back  # type: ignore[assignment]
    try:
        yield
    finally:
        log_reader.read_log_state, log_reader.read_commit_infos = saved


@functools.cache
def latest_checksum(table: str) -> Path:
    """Where the checksum of ``table``'s latest version is, found once: delta-rs loads the whole table to
    say its version (100 ms and more at 100,000 files), which in a round would leave the next timed read
    its caches to refill."""
    from deltalake import DeltaTable

    from airflow_provider_deltacc.delta_log.checksum import checksum_name

    return Path(table) / "_delta_log" / checksum_name(DeltaTable(table).version())


def with_checksums(table: str) -> str:
    """The twin of ``table`` as delta-spark leaves a table: its log's files hard-linked (only the log is read:
    no data files), with a checksum beside every commit (the table's own, else one made from delta-rs's
    answers and the commits' txn actions). Made once per run, beside the table, and flushed to disk before
    any timing: writing thousands of files between timed reads would time the file system's writeback."""
    import os
    import shutil

    from airflow_provider_deltacc.delta_log.checksum import checksum_name

    twin = Path(f"{table}-checksums")
    if twin.exists():
        shutil.rmtree(twin)
    log = twin / "_delta_log"
    log.mkdir(parents=True)
    source = Path(table) / "_delta_log"
    for entry in source.iterdir():
        if entry.is_file():
            os.link(entry, log / entry.name)
    for version, content in delta_spark_checksums(table).items():
        if not (log / checksum_name(version)).exists():
            (log / checksum_name(version)).write_text(content, encoding="utf-8")
    os.sync()
    return str(twin)


def delta_spark_checksums(table: str) -> dict[int, str]:
    """The checksum file delta-spark writes beside every commit, for each version: the latest's protocol and
    metadata (:func:`delta_spark_checksum`; these tables never change them) and the txn identities recorded
    up to that version, read from the commit files."""
    from deltalake import DeltaTable

    from airflow_provider_deltacc.contract.commits import txn_actions

    latest = delta_spark_checksum(table)
    log = Path(table) / "_delta_log"
    txns: dict[str, int] = {}
    contents: dict[int, str] = {}
    for version in range(DeltaTable(table).version() + 1):
        for txn in txn_actions((log / f"{version:020d}.json").read_text(encoding="utf-8")):
            txns[txn["appId"]] = txn["version"]
        listed = [{"appId": app, "version": v} for app, v in txns.items()]
        contents[version] = json.dumps({**latest, "setTransactions": listed})
    return contents


def delta_spark_checksum(table: str) -> dict[str, Any]:
    """The checksum file delta-spark writes for the table's latest version, from delta-rs's answers: the
    protocol, the metadata and every txn identity recorded (the bench's writers')."""
    from deltalake import DeltaTable

    delta = DeltaTable(table)
    metadata, protocol = delta.metadata(), delta.protocol()
    txns = [(app, delta.transaction_version(app)) for app in (RERUN_APP, WRITER_APP)]
    return {
        "txnId": "bench",
        "tableSizeBytes": 0,
        "numFiles": 0,
        "numMetadata": 1,
        "numProtocol": 1,
        "metadata": {
            "id": metadata.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": delta.schema().to_json(),
            "partitionColumns": list(metadata.partition_columns),
            "configuration": dict(metadata.configuration),
            "createdTime": metadata.created_time,
        },
        "protocol": {
            "minReaderVersion": protocol.min_reader_version,
            "minWriterVersion": protocol.min_writer_version,
        },
        "setTransactions": [{"appId": app, "version": v} for app, v in txns if v is not None],
    }


def same_answers(table: str, twin: str) -> None:
    """The log reader's answers on ``table``, and on its twin with checksums, equal delta-rs's (an
    AssertionError names the first that does not)."""
    from deltalake import DeltaTable

    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.delta_log.log_reader import (
        delta_rs_state,
        read_commit_infos,
        read_log_state,
    )

    apps = (RERUN_APP, WRITER_APP, "bench/scale/new")
    ours = read_log_state(Table(table), app_ids=apps, partitions=True)
    theirs = delta_rs_state(Table(table), app_ids=apps, partitions=True)
    for name in ("version", "min_reader_version", "min_writer_version", "reader_features", "writer_features"):
        assert getattr(ours, name) == getattr(theirs, name), (table, name)
    for name in ("partition_columns", "configuration", "txn_versions"):
        assert getattr(ours, name) == getattr(theirs, name), (table, name)
    assert ours.schema_fields() == json.loads(theirs.schema_string)["fields"], (table, "schema")
    as_set = [{frozenset(p.items()) for p in state.partitions or ()} for state in (ours, theirs)]
    assert as_set[0] == as_set[1], (table, "partitions")
    assert read_commit_infos(Table(table), None, 20) == DeltaTable(table).history(20), (table, "commit infos")
    light = read_log_state(Table(twin), app_ids=apps)
    with_files = read_log_state(Table(twin), app_ids=apps, partitions=True)
    for name in ("version", "min_reader_version", "min_writer_version", "partition_columns", "txn_versions"):
        assert getattr(light, name) == getattr(theirs, name), (twin, name)
        assert getattr(with_files, name) == getattr(theirs, name), (twin, "with the partitions", name)
    assert light.configuration == theirs.configuration, (twin, "configuration")
    assert light.schema_fields() == json.loads(theirs.schema_string)["fields"], (twin, "schema")
    assert {frozenset(p.items()) for p in with_files.partitions or ()} == as_set[1], (twin, "partitions")


def build(tables_dir: Path, commits: list[int], files: list[int], *, data: bool) -> dict[str, str]:
    """The bench's tables in ``tables_dir``, built unless already there (with data files: see
    :func:`history_table`)."""
    tables: dict[str, str] = {}
    for kind, sizes in (("commits", commits), ("files", files)):
        for count in sizes:
            path = tables_dir / f"{kind}-{count}{'-data' if data and kind == 'commits' else ''}"
            began = now()
            if not (path / "_delta_log").exists():
                history_table(path, count, data=data) if kind == "commits" else files_table(path, count)
                print(f"built {count:,} {kind} in {now() - began:.1f} s")
            tables[f"{count:,} {kind}"] = str(path)
    return tables


def time_reads(
    tables: dict[str, str], twins: dict[str, str], rounds: int
) -> dict[tuple[str, str, str], list[float]]:
    """(table, read, reader) -> the seconds of each round; every reader and every table in every round (the
    ``checksum`` reader on the table's twin with checksums)."""

    def path(name: str, reader: str) -> str:
        return twins[name] if reader == "checksum" else tables[name]

    calls = {(name, reader): measurements(path(name, reader)) for name in tables for reader in READERS}
    times: dict[tuple[str, str, str], list[float]] = {}
    for reader in READERS:  # once untimed: imports, first opens
        for name in tables:
            with reading_with(reader, path(name, reader)):
                for call in calls[(name, reader)].values():
                    call()
    for round_ in range(rounds):
        order = list(tables) if round_ % 2 == 0 else list(reversed(tables))
        readers = READERS if round_ % 2 == 0 else tuple(reversed(READERS))
        for name in order:
            for reader in readers:
                with reading_with(reader, path(name, reader)):
                    for what, call in calls[(name, reader)].items():
                        began = now()
                        call()
                        times.setdefault((name, what, reader), []).append(now() - began)
    return times


def print_reads(
    times: dict[tuple[str, str, str], list[float]], commits: list[int], files: list[int], rounds: int
) -> None:
    whats = list(dict.fromkeys(what for _, what, _ in times))

    def ms(name: str, what: str, reader: str) -> float:
        return median(times[(name, what, reader)]) * 1000

    print(
        f"\nmedian of {rounds} rounds, ms: delta-rs / reader / reader with the checksum (reader / delta-rs)"
    )
    print(f"  {'table':<18}" + "".join(f"{w:>36}" for w in whats))
    kinds = [
        (f"{size:,} {kind}", kind)
        for kind, sizes in (("commits", commits), ("files", files))
        for size in sizes
    ]
    for name, _ in kinds:
        cells = [
            f"{ms(name, w, 'delta-rs'):7.1f} / {ms(name, w, 'reader'):6.1f} / {ms(name, w, 'checksum'):5.1f} "
            f"({ms(name, w, 'reader') / ms(name, w, 'delta-rs'):4.2f}x)"
            for w in whats
        ]
        print(f"  {name:<18}" + "".join(f"{c:>36}" for c in cells))
    for kind, sizes, goal in (("commits", commits, 1.5), ("files", files, 2.0)):
        if len(sizes) < 2:
            continue
        small, large = f"{sizes[0]:,} {kind}", f"{sizes[-1]:,} {kind}"
        print(f"\ngoal: {large} within {goal}x of {small} (delta-rs / reader / reader with the checksum):")
        for what in whats:
            ratios = [ms(large, what, r) / ms(small, what, r) for r in READERS]
            verdicts = " / ".join("met" if ratio <= goal else "MISSED" for ratio in ratios[1:])
            print(f"  {what:<12} {ratios[0]:6.2f}x / {ratios[1]:5.2f}x / {ratios[2]:5.2f}x {verdicts}")
    if 10000 in commits:
        for reader in READERS[1:]:
            value = ms("10,000 commits", "duplicate", reader)
            verdict = "met" if value < 50 else "MISSED"
            print(f"goal: duplicate under 50 ms at 10,000 commits ({reader}): {value:.1f} ms {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--commits", default="100,1000,10000", help="history sizes, comma-separated")
    parser.add_argument("--files", default="1000,100000", help="file counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--tables", help="keep the tables in this folder and reuse them (default: a temp dir)"
    )
    parser.add_argument("--spark", action="store_true", help="also write the commit tables through Spark")
    args = parser.parse_args()
    commits = [int(c) for c in args.commits.split(",") if c]
    files = [int(f) for f in args.files.split(",") if f]

    with contextlib.ExitStack() as stack:
        if args.tables:
            tables_dir = Path(args.tables)
            tables_dir.mkdir(parents=True, exist_ok=True)
        else:
            tables_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="deltacc-bench-scale-")))
        tables = build(tables_dir, commits, files, data=args.spark)
        twins = {name: with_checksums(table) for name, table in tables.items()}
        for name, table in tables.items():
            same_answers(table, twins[name])
        print(f"answers equal to delta-rs's on all {len(tables)} tables, with and without checksums")
        times = time_reads(tables, twins, args.rounds)
        history = {f"{count:,} commits": tables[f"{count:,} commits"] for count in commits}
        spark = spark_rounds(history, args.rounds) if args.spark and history else None

    print_reads(times, commits, files, args.rounds)
    if spark is not None:
        print_spark(spark, list(history))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
