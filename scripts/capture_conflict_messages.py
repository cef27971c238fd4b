#!/usr/bin/env python3
"""Capture real Delta commit-conflict messages into the classifier's fixtures, with their provenance.

Run by hand, never by the test suite (it downloads packages and jars). Each run builds a throwaway
virtual environment under ``--env-dir`` (with uv), installs the engine version asked for, makes two writers
collide on a fresh table for each conflict kind the classifier handles, and writes one fixture per captured
message into ``--out``: a provenance header (versions, date, the exact command, the interleaving, the
exception class and the winner's commit as the table's history states it), then the message, exactly as
``str(exception)`` gives it.

Every collision is a held-loser interleaving: the loser reads its snapshot and stops (Spark: a Python UDF in
its source blocks at a file gate; delta-rs: a stale ``DeltaTable`` or a blocking Arrow stream), the winner
commits, then the loser is let go and Delta's conflict checker fails it.

delta-spark (pyspark, delta-spark and the Delta jars, resolved by Spark's ivy into ``--env-dir``)::

    python3 scripts/capture_conflict_messages.py spark --pyspark 3.5 --delta 3.3 \\
        --env-dir /tmp/capture-3.3 --out tests/unit/occ/fixtures
    python3 scripts/capture_conflict_messages.py spark --pyspark 4.0 --delta 4.0 \\
        --env-dir /tmp/capture-4.0 --out tests/unit/occ/fixtures

delta-rs (the ``deltalake`` version uv.lock pins, unless ``--deltalake`` names another)::

    python3 scripts/capture_conflict_messages.py delta-rs --env-dir /tmp/capture-rs \\
        --out tests/unit/occ/fixtures

The JVM part runs under ``flock /tmp/deltacc-spark.lock`` (the machine's shared Spark lock). Afterwards,
add or update the files' entries in ``tests/unit/occ/fixtures/cases.json``: what the classifier must read
from each message (kind, table, partition, winning version and operation); the header's ``winner`` line is
the ground truth for the last two. This file imports only the standard library at module level: its
``_inside-*`` commands run in the throwaway environment, which does not have the provider installed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SPARK_LOCK = "/tmp/deltacc-spark.lock"
HEADER_END = "# ---"
DAY_A, DAY_B = "2026-11-20", "2026-11-21"
SCHEMA = "id INT, date STRING, value STRING"


# ---------------------------------------------------------------- the launcher (runs on the host python)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "_inside-spark":
        return _inside_spark(args)
    if args.command == "_inside-delta-rs":
        return _inside_delta_rs(args)
    command = _command_line(argv)
    env_dir = Path(args.env_dir).resolve()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    python = _build_env(env_dir, _requirements(args), uv=args.uv)
    inner = [str(python), str(Path(__file__).resolve()), f"_inside-{args.command}"]
    inner += ["--env-dir", str(env_dir), "--out", str(out), "--command-line", command]
    if args.command == "spark":
        inner += ["--prefix", args.prefix or _spark_prefix(args.delta)]
        # Every JVM on this machine runs under the shared Spark lock (unless the caller already holds it).
        if not args.lock_held:
            inner = ["flock", SPARK_LOCK, *inner]
    else:
        inner += ["--prefix", args.prefix or "rs"]
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    env.pop("PYSPARK_PYTHON", None)
    return subprocess.run(inner, env=env, check=False).returncode


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    spark = sub.add_parser("spark", help="capture delta-spark conflicts")
    spark.add_argument(
        "--pyspark", required=True, help="pyspark release line, e.g. 3.5 (or an exact version)"
    )
    spark.add_argument("--delta", required=True, help="delta-spark release line, e.g. 3.3 (or exact)")
    rs = sub.add_parser("delta-rs", help="capture delta-rs (deltalake) conflicts")
    spark.add_argument(
        "--lock-held", action="store_true", help=f"the caller already holds {SPARK_LOCK} (several captures)"
    )
    rs.add_argument("--deltalake", help="deltalake version (default: the one uv.lock pins)")
    for command in (spark, rs):
        command.add_argument("--env-dir", required=True, help="throwaway directory for the venv and jars")
        command.add_argument("--out", required=True, help="directory the fixture files are written to")
        command.add_argument("--prefix", help="fixture file-name prefix (default spark_<major>_<minor> / rs)")
        command.add_argument("--uv", help="the uv executable (default: uv on PATH, else .cache/uv-bootstrap)")
    for inside in ("_inside-spark", "_inside-delta-rs"):
        command = sub.add_parser(inside)
        for option in ("--env-dir", "--out", "--command-line", "--prefix"):
            command.add_argument(option, required=True)
    return parser


def _command_line(argv: list[str] | None) -> str:
    words = ["python3", os.path.relpath(Path(__file__).resolve(), REPO)]
    return shlex.join(words + list(sys.argv[1:] if argv is None else argv))


def _spark_prefix(delta: str) -> str:
    major, minor = [*delta.split("."), "0"][:2]
    return f"spark_{major}_{minor}"


def _pin(name: str, version: str) -> str:
    # "3.5" means the newest 3.5.x; "3.5.7" means exactly that.
    return f"{name}~={version}.0" if version.count(".") == 1 else f"{name}=={version}"


def _requirements(args: argparse.Namespace) -> list[str]:
    if args.command == "spark":
        return [_pin("pyspark", args.pyspark), _pin("delta-spark", args.delta)]
    return [f"deltalake=={args.deltalake or _locked_version('deltalake')}", "pyarrow"]


def _locked_version(package: str) -> str:
    lock = (REPO / "uv.lock").read_text()
    found = re.search(rf'^name = "{re.escape(package)}"\nversion = "([^"]+)"', lock, re.MULTILINE)
    if not found:
        raise SystemExit(f"error: uv.lock pins no {package}; pass its version explicitly")
    return found.group(1)


def _build_env(env_dir: Path, requirements: list[str], *, uv: str | None) -> Path:
    uv_exe = uv or shutil.which("uv") or str(REPO / ".cache" / "uv-bootstrap" / "bin" / "uv")
    if not Path(uv_exe).exists() and shutil.which(uv_exe) is None:
        raise SystemExit(f"error: uv not found at {uv_exe}; pass --uv or run `make setup` once")
    venv = env_dir / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        interpreter = shutil.which("python3.11") or sys.executable
        subprocess.run(
            [uv_exe, "venv", "--quiet", "--no-config", "--python", interpreter, str(venv)], check=True
        )
    # --no-config: the project's own uv settings (constraints, overrides) must not leak into this env.
    install = [uv_exe, "pip", "install", "--quiet", "--no-config", "--python", str(python), *requirements]
    subprocess.run(install, check=True, cwd=env_dir)
    return python


# ---------------------------------------------------------------- what one captured message is


@dataclass
class Capture:
    """One collision: how it was made and what it raised."""

    name: str
    scenario: str
    exception: BaseException | None = None
    winner: str = ""
    extra: dict[str, str] = field(default_factory=dict)


def _write_fixture(
    out: Path, prefix: str, capture: Capture, versions: str, command: str, *, jvm_class: str | None
) -> Path:
    assert capture.exception is not None
    exc = capture.exception
    lines = [
        "# provenance: captured",
        f"# versions: {versions}",
        f"# date: {dt.datetime.now(dt.UTC).date().isoformat()}",
        f"# command: {command}",
        f"# scenario: {capture.scenario}",
        f"# winner: {capture.winner}",
        f"# exception: {type(exc).__module__}.{type(exc).__qualname__}",
        "# exception bases: " + ", ".join(k.__qualname__ for k in type(exc).__mro__[1:] if k is not object),
    ]
    if jvm_class:
        lines.append(f"# jvm exception: {jvm_class}")
    lines += [f"# {key}: {value}" for key, value in capture.extra.items()]
    path = out / f"{prefix}_{capture.name}.txt"
    path.write_text("\n".join(lines) + "\n" + HEADER_END + "\n" + str(exc))
    return path


def _capture_all(runs: Mapping[str, Callable[[], Capture]], write: Callable[[Capture], Path]) -> int:
    """Run every collision, write each captured message, and say which were not captured and why."""
    written: list[Path] = []
    missed: list[str] = []
    for name, run in runs.items():
        try:
            capture = run()
        except Exception as exc:  # a scenario this version cannot run: say so and go on
            missed.append(f"{name}: could not run: {exc!r}, cause {exc.__cause__!r}"[:600])
            continue
        if capture.exception is None:
            missed.append(f"{name}: the loser committed ({capture.scenario})")
            continue
        written.append(write(capture))
    for path in written:
        print(f"captured {path}")
    for line in missed:
        print(f"not captured: {line}")
    return 0 if written else 1


# ---------------------------------------------------------------- delta-spark (runs in the throwaway venv)


class _Gate:
    """A file gate across the Spark Python worker and this process (see tests/support/gate.py)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / f"gate-{uuid.uuid4().hex[:8]}"
        self.directory.mkdir(parents=True)
        self.entered, self.released = self.directory / "entered", self.directory / "released"

    def column(self, name: str) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql.types import BooleanType

        entered, released = str(self.entered), str(self.released)

        def hold(_: Any) -> bool:
            import os
            import time

            if not os.path.exists(released):
                open(entered, "a").close()
                deadline = time.monotonic() + 120
                while not os.path.exists(released) and time.monotonic() < deadline:
                    time.sleep(0.05)
            return True

        return F.udf(hold, BooleanType()).asNondeterministic()(F.col(name))

    def wait_entered(self, loser: threading.Thread) -> None:
        deadline = time.monotonic() + 120
        while not self.entered.exists():
            if not loser.is_alive():
                raise RuntimeError("the loser ended before reaching the gate (it failed before its commit)")
            if time.monotonic() > deadline:
                raise TimeoutError("the held loser never reached the gate")
            time.sleep(0.05)


def _race(
    loser: Callable[[], object], winner: Callable[[], object], gate: _Gate | None
) -> BaseException | None:
    """Run ``loser`` in a thread until it holds at ``gate``, commit ``winner``, release; return its error."""
    outcome: list[BaseException | None] = [None]

    def run() -> None:
        try:
            loser()
        except BaseException as exc:  # what we are here to record
            outcome[0] = exc

    thread = threading.Thread(target=run)
    thread.start()
    if gate is not None:
        try:
            gate.wait_entered(thread)
        except RuntimeError as early:
            raise early from outcome[0]
    winner()
    if gate is not None:
        gate.released.touch()
    thread.join(timeout=300)
    return outcome[0]


def _inside_spark(args: argparse.Namespace) -> int:
    from importlib import metadata

    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    env_dir, out = Path(args.env_dir), Path(args.out)
    work = env_dir / f"run-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("capture-conflict-messages")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.jars.ivy", str(env_dir / "ivy"))
        .config("spark.jars.ivySettings", str(_ivy_settings(env_dir)))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
    )
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    java = spark.sparkContext._jvm.System.getProperty("java.version")  # type: ignore[union-attr]
    versions = (
        f"pyspark {metadata.version('pyspark')}, delta-spark {metadata.version('delta-spark')}, "
        f"java {java}, python {sys.version.split()[0]}"
    )

    def write(capture: Capture) -> Path:
        jvm = getattr(capture.exception, "_origin", None) or getattr(
            capture.exception, "java_exception", None
        )
        jvm_class = jvm.getClass().getName() if jvm is not None else None
        return _write_fixture(out, args.prefix, capture, versions, args.command_line, jvm_class=jvm_class)

    runs = {name: functools.partial(scenario, spark, work) for name, scenario in spark_scenarios().items()}
    try:
        return _capture_all(runs, write)
    finally:
        spark.stop()


def _ivy_settings(env_dir: Path) -> Path:
    """Ivy settings that resolve from Maven Central only, into ``env_dir``.

    Spark's default chain looks in ``~/.m2`` first, where a POM without its jar fails the whole resolution.
    """
    settings = env_dir / "ivysettings.xml"
    settings.write_text(
        "<ivysettings>\n"
        '  <settings defaultResolver="central"/>\n'
        f'  <caches defaultCacheDir="{env_dir / "ivy" / "cache"}"/>\n'
        '  <resolvers><ibiblio name="central" m2compatible="true"/></resolvers>\n'
        "</ivysettings>\n"
    )
    return settings


def _seed(spark: Any, path: str, *, partitioned: bool = True) -> None:
    rows = [(i, DAY_A if i % 2 else DAY_B, f"v{i}") for i in range(6)]
    writer = spark.createDataFrame(rows, SCHEMA).write.format("delta")
    (writer.partitionBy("date") if partitioned else writer).save(path)


def _winner_commit(spark: Any, path: str) -> str:
    row = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]
    return f"version {row['version']}, {row['operation']}"


def _held_merge(spark: Any, path: str, gate: _Gate) -> Callable[[], None]:
    """A MERGE of one row into partition DAY_A whose source blocks at ``gate`` once the snapshot is read."""
    from delta.tables import DeltaTable

    def merge() -> None:
        source = spark.createDataFrame([(1, DAY_A, "merged")], SCHEMA).coalesce(1).where(gate.column("id"))
        (
            DeltaTable.forPath(spark, path)
            .alias("t")
            .merge(source.alias("s"), f"t.id = s.id AND t.date = '{DAY_A}' AND s.date = t.date")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    return merge


def _held_append(spark: Any, path: str, gate: _Gate, **options: str) -> Callable[[], None]:
    def append() -> None:
        frame = spark.createDataFrame([(100, DAY_A, "held")], SCHEMA).coalesce(1).where(gate.column("id"))
        writer = frame.write.format("delta").mode("append")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(path)

    return append


def _append(spark: Any, path: str, day: str = DAY_A, **options: str) -> None:
    writer = spark.createDataFrame([(200, day, "winner")], SCHEMA).write.format("delta").mode("append")
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(path)


def _held_overwrite_dynamic(spark: Any, path: str, gate: _Gate) -> Callable[[], None]:
    """A dynamic partition overwrite of DAY_A: it removes that partition's files without reading them."""

    def overwrite() -> None:
        frame = spark.createDataFrame([(100, DAY_A, "held")], SCHEMA).coalesce(1).where(gate.column("id"))
        frame.write.format("delta").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(path)

    return overwrite


def _held_ntz_append(spark: Any, path: str, gate: _Gate) -> Callable[[], None]:
    """An append adding a TIMESTAMP_NTZ column, which needs the timestampNtz feature: a protocol upgrade."""
    import datetime as dt_

    def append() -> None:
        row = (100, DAY_A, "held", dt_.datetime(2026, 11, 20, 13))
        frame = (
            spark.createDataFrame([row], SCHEMA + ", ts TIMESTAMP_NTZ").coalesce(1).where(gate.column("id"))
        )
        frame.write.format("delta").mode("append").option("mergeSchema", "true").save(path)

    return append


def _sql(statement: str) -> Callable[[Any, str], object]:
    """A winner that runs ``statement`` with ``{path}`` filled in."""
    return lambda spark, path: spark.sql(statement.format(path=path))


@dataclass(frozen=True)
class _SparkRace:
    """A delta-spark collision: ``loser`` holds at a gate after reading its snapshot while ``winner`` commits.

    :param seed: seed the table partitioned by date, unpartitioned, or not at all (an empty directory).
    :param conf: session settings for the race only.
    """

    name: str
    scenario: str
    loser: Callable[[Any, str, _Gate], Callable[[], object]]
    winner: Callable[[Any, str], object]
    seed: str = "partitioned"
    conf: dict[str, str] = field(default_factory=dict)

    def __call__(self, spark: Any, work: Path) -> Capture:
        path = str(work / self.name)
        if self.seed != "none":
            _seed(spark, path, partitioned=self.seed == "partitioned")
        gate = _Gate(work)
        for key, value in self.conf.items():
            spark.conf.set(key, value)
        try:
            exc = _race(self.loser(spark, path, gate), lambda: self.winner(spark, path), gate)
        finally:
            for key in self.conf:
                spark.conf.unset(key)
        return Capture(self.name, self.scenario, exc, _winner_commit(spark, path))


def _schema_change_since_analysis(spark: Any, work: Path) -> Capture:
    from delta.tables import DeltaTable

    path = str(work / "schema_change_since_analysis")
    _seed(spark, path)
    target = DeltaTable.forPath(spark, path)
    source = spark.createDataFrame([(1, DAY_A, "merged")], SCHEMA)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (note STRING)")
    exc: BaseException | None = None
    try:
        target.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
    except Exception as caught:  # what we are here to record
        exc = caught
    return Capture(
        "schema_change_since_analysis",
        "a DeltaTable object made, then ALTER TABLE ADD COLUMNS commits, then a MERGE through the old object",
        exc,
        _winner_commit(spark, path),
    )


def spark_scenarios() -> dict[str, Callable[[Any, Path], Capture]]:
    """The delta-spark collisions by name (the fixture is ``spark_<major>_<minor>_<name>.txt``)."""

    def append(day: str = DAY_A, **options: str) -> Callable[[Any, str], object]:
        return lambda spark, path: _append(spark, path, day, **options)

    def held_append(**options: str) -> Callable[[Any, str, _Gate], Callable[[], object]]:
        return lambda spark, path, gate: _held_append(spark, path, gate, **options)

    delete_partition = _sql(f"DELETE FROM delta.`{{path}}` WHERE date = '{DAY_A}'")
    races = [
        _SparkRace(
            "append_partition",
            f"MERGE into partition date={DAY_A} of a partitioned table held after reading its snapshot; "
            "a blind append to the same partition commits meanwhile",
            _held_merge,
            append(),
        ),
        _SparkRace(
            "append_root",
            "MERGE into an unpartitioned table held after reading its snapshot; "
            "a blind append commits meanwhile",
            _held_merge,
            append(),
            seed="unpartitioned",
        ),
        _SparkRace(
            "delete_read",
            f"MERGE into partition date={DAY_A} held after reading its snapshot; a DELETE of that whole "
            "partition (files removed, none added) commits meanwhile",
            _held_merge,
            delete_partition,
        ),
        # The one writer that removes files without recording them as read: a dynamic partition overwrite
        # (DELETE/UPDATE/MERGE/OPTIMIZE read what they remove, so they fail with delete_read first).
        _SparkRace(
            "delete_delete",
            f"dynamic partition overwrite of date={DAY_A} held after reading its snapshot; a metadata-only "
            "DELETE of that partition (files removed, none added) commits meanwhile",
            _held_overwrite_dynamic,
            delete_partition,
        ),
        _SparkRace(
            "metadata_changed",
            "blind append held after reading its snapshot; ALTER TABLE ADD COLUMNS commits meanwhile",
            held_append(),
            _sql("ALTER TABLE delta.`{path}` ADD COLUMNS (note STRING)"),
        ),
        _SparkRace(
            "concurrent_transaction",
            "blind append with txnAppId=capture-app txnVersion=2 held after reading its snapshot (and the "
            "app id's version); an append to another partition with the same txnAppId, txnVersion=1, "
            "commits meanwhile",
            held_append(txnAppId="capture-app", txnVersion="2"),
            append(DAY_B, txnAppId="capture-app", txnVersion="1"),
        ),
        _SparkRace(
            "protocol_create_race",
            "two appends to an empty directory: the first holds after finding no table, the second "
            "creates the table (version 0) meanwhile",
            held_append(),
            append(),
            seed="none",
        ),
        _SparkRace(
            "protocol_changed",
            "append with mergeSchema adding a TIMESTAMP_NTZ column (a protocol upgrade) held after reading "
            "its snapshot; enabling the change data feed (another protocol upgrade) commits meanwhile",
            _held_ntz_append,
            _sql("ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"),
        ),
        # 0 = a single attempt: the loser's first commit finds its version taken and may not try again.
        _SparkRace(
            "max_commit_retries",
            "spark.databricks.delta.maxCommitAttempts=0 (one attempt); blind append held after reading its "
            "snapshot; a blind append to another partition commits meanwhile (no logical conflict, no "
            "retry allowed)",
            held_append(),
            append(DAY_B),
            conf={"spark.databricks.delta.maxCommitAttempts": "0"},
        ),
    ]
    scenarios: dict[str, Callable[[Any, Path], Capture]] = {race.name: race for race in races}
    scenarios["schema_change_since_analysis"] = _schema_change_since_analysis
    return scenarios


# ---------------------------------------------------------------- delta-rs (runs in the throwaway venv)


def _inside_delta_rs(args: argparse.Namespace) -> int:
    from importlib import metadata

    out = Path(args.out)
    work = Path(args.env_dir) / f"run-{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    versions = (
        f"deltalake {metadata.version('deltalake')}, pyarrow {metadata.version('pyarrow')}, "
        f"python {sys.version.split()[0]}"
    )
    runs = {name: functools.partial(scenario, work) for name, scenario in rs_scenarios().items()}
    return _capture_all(
        runs,
        lambda capture: _write_fixture(
            out, args.prefix, capture, versions, args.command_line, jvm_class=None
        ),
    )


def _rs_rows(ids: list[int], day: str = DAY_A) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "date": pa.array([day] * len(ids)),
            "value": pa.array([f"v{i}" for i in ids]),
        }
    )


def _rs_seed(path: str) -> None:
    from deltalake import write_deltalake

    # Two files in DAY_A, so that a compaction has something to rewrite there.
    write_deltalake(path, _rs_rows([1, 3]), partition_by=["date"])
    write_deltalake(path, _rs_rows([5]), mode="append")
    write_deltalake(path, _rs_rows([2, 4], DAY_B), mode="append")


def _rs_winner(path: str) -> str:
    from deltalake import DeltaTable

    table = DeltaTable(path)
    last = table.history(1)[0]
    return f"version {table.version()}, {last.get('operation')}"


def _rs_stale(
    path: str, make_loser: Callable[[Any], object], winner: Callable[[], object]
) -> BaseException | None:
    """Load the loser's snapshot, let ``winner`` commit, then run the loser from the stale snapshot."""
    from deltalake import DeltaTable

    stale = DeltaTable(path)
    winner()
    try:
        make_loser(stale)
    except Exception as exc:  # what we are here to record
        return exc
    return None


def _blocking_reader(release: threading.Event, entered: threading.Event) -> Any:
    import pyarrow as pa

    table = _rs_rows([100])

    def batches() -> Iterator[Any]:
        entered.set()
        release.wait(120)
        yield from table.to_batches()

    return pa.RecordBatchReader.from_batches(table.schema, batches())


@dataclass(frozen=True)
class _Stale:
    """A delta-rs collision: ``loser`` runs from a snapshot loaded before ``winner`` committed."""

    name: str
    scenario: str
    loser: Callable[[Any], object]
    winner: Callable[[str], object]
    setup: Callable[[str], object] | None = None

    def __call__(self, work: Path) -> Capture:
        path = str(work / self.name)
        _rs_seed(path)
        if self.setup is not None:
            self.setup(path)
        exc = _rs_stale(path, self.loser, lambda: self.winner(path))
        return Capture(self.name, self.scenario, exc, _rs_winner(path))


def _rs_create_race(work: Path) -> Capture:
    from deltalake import write_deltalake

    path = str(work / "create_race")
    release, entered = threading.Event(), threading.Event()
    holder: list[BaseException | None] = [None]

    def loser() -> None:
        try:
            write_deltalake(path, _blocking_reader(release, entered), mode="append")
        except Exception as exc:  # what we are here to record
            holder[0] = exc

    thread = threading.Thread(target=loser)
    thread.start()
    entered.wait(120)
    write_deltalake(path, _rs_rows([1]), mode="append")
    release.set()
    thread.join(120)
    return Capture(
        "create_race",
        "two write_deltalake(mode=append) to an empty directory: the first holds inside its Arrow stream "
        "after finding no table, the second creates the table (version 0) meanwhile",
        holder[0],
        _rs_winner(path),
    )


def rs_scenarios() -> dict[str, Callable[[Path], Capture]]:
    """The delta-rs collisions by name (the fixture is ``rs_<name>.txt``)."""
    from deltalake import CommitProperties, DeltaTable, TableFeatures, Transaction, write_deltalake

    def append(stale: Any, **kwargs: Any) -> None:
        write_deltalake(stale, _rs_rows([9]), mode="append", **kwargs)

    def app_txn(version: int) -> Any:
        return CommitProperties(app_transactions=[Transaction(app_id="capture-app", version=version)])

    def add_feature(feature: Any) -> Callable[[str], object]:
        return lambda path: DeltaTable(path).alter.add_feature(feature, allow_protocol_versions_increase=True)

    stale = [
        # A blind append never fails a WriteSerializable reader in delta-rs: the winner must be a rewrite.
        _Stale(
            "append",
            f"DeltaTable.delete(date = '{DAY_A}' AND id = 1) from a snapshot loaded before a compaction "
            "(optimize.compact, which rewrote that partition's two files into one) committed",
            lambda t: t.delete(f"date = '{DAY_A}' AND id = 1"),
            lambda path: DeltaTable(path).optimize.compact(),
        ),
        _Stale(
            "delete_read",
            f"DeltaTable.update(date = '{DAY_A}' AND id = 1) from a snapshot loaded before a delete of "
            "that whole partition committed",
            lambda t: t.update(updates={"value": "'updated'"}, predicate=f"date = '{DAY_A}' AND id = 1"),
            lambda path: DeltaTable(path).delete(f"date = '{DAY_A}'"),
        ),
        _Stale(
            "metadata_changed",
            "write_deltalake(mode=append) through a DeltaTable loaded before a table-property change "
            "committed",
            append,
            lambda path: DeltaTable(path).alter.set_table_properties(
                {"delta.logRetentionDuration": "interval 7 days"}
            ),
        ),
        _Stale(
            "concurrent_transaction",
            "write_deltalake(mode=append, app transaction capture-app v2) through a DeltaTable loaded before "
            "an append with app transaction capture-app v1 committed",
            lambda t: append(t, commit_properties=app_txn(2)),
            lambda path: write_deltalake(
                path, _rs_rows([8], DAY_B), mode="append", commit_properties=app_txn(1)
            ),
        ),
        _Stale(
            "protocol_changed",
            "write_deltalake(mode=append) through a DeltaTable loaded before a protocol upgrade "
            "(alter.add_feature(DeletionVectors): reader 3, writer 7) committed",
            append,
            add_feature(TableFeatures.DeletionVectors),
        ),
        _Stale(
            "protocol_changed_both",
            "on a reader 3 / writer 7 table, alter.add_feature(AppendOnly) from a snapshot loaded before "
            "alter.add_feature(ChangeDataFeed) committed (both commits carry a protocol action)",
            lambda t: t.alter.add_feature(TableFeatures.AppendOnly),
            add_feature(TableFeatures.ChangeDataFeed),
            setup=add_feature(TableFeatures.DeletionVectors),
        ),
        _Stale(
            "max_commit_attempts_zero",
            "write_deltalake(mode=append, max_commit_retries=0) through a DeltaTable loaded before another "
            "append committed (no logical conflict, but no retry allowed)",
            lambda t: append(t, commit_properties=CommitProperties(max_commit_retries=0)),
            lambda path: write_deltalake(path, _rs_rows([8], DAY_B), mode="append"),
        ),
    ]
    scenarios: dict[str, Callable[[Path], Capture]] = {s.name: s for s in stale}
    scenarios["create_race"] = _rs_create_race
    return scenarios


if __name__ == "__main__":
    sys.exit(main())
