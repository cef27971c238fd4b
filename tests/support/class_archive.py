"""Make the run's class archive (JDK's dynamic AppCDS) of the classes a test's Spark driver loads:
``python -m tests.support.class_archive``.

A Spark driver with Delta loads thousands of classes before its first commit; a JVM that maps them from an
archive skips reading, parsing and verifying them again. The suite starts hundreds of drivers, so
``scripts/run_suite.py`` makes the archive first in its light lane, while the JVM lane starts (about 40 s,
once per machine: it is kept in ``.cache/`` and made again when Java, PySpark or the jars change).
:mod:`tests.support.jvm_options` maps it.

The archive is written when a JVM exits after running, with ``-XX:ArchiveClassesAtExit``, the kind of work a
test's driver does: a local Delta session, writes, DML, MERGE, OPTIMIZE, a Python UDF and a real conflict.
It must be made with the class path the tests' drivers have (no ``SPARK_CONF_DIR``); a JVM whose class path
differs maps nothing and runs as it would without it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.jvm_options import CLASS_ARCHIVE, JVM, spark_default_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_KEY_FILE = CLASS_ARCHIVE.with_suffix(".key")


def archive_key() -> str:
    """What the archive depends on: the Java runtime and its options, PySpark's jars and the provider's cached
    jars."""
    import pyspark

    from airflow_provider_deltacc.spark_jars.delta_jars import cached_jars

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True).stderr
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar")) + sorted(cached_jars())
    stamps = [f"{jar}:{jar.stat().st_size}:{jar.stat().st_mtime_ns}" for jar in jars]
    return hashlib.sha256("\n".join([java, *JVM, *stamps]).encode()).hexdigest()


def make_archive() -> Path:
    """Make :data:`~tests.support.jvm_options.CLASS_ARCHIVE` unless the one there is current; return it."""
    key = archive_key()
    if CLASS_ARCHIVE.is_file() and _KEY_FILE.is_file() and _KEY_FILE.read_text() == key:
        print(f"class archive: current ({CLASS_ARCHIVE})")
        return CLASS_ARCHIVE
    CLASS_ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    partial = CLASS_ARCHIVE.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SPARK_CONF_DIR"}
    dump = (*JVM, f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds*=off", *spark_default_properties())
    env["SPARK_SUBMIT_OPTS"] = " ".join(dump)
    with tempfile.TemporaryDirectory(prefix="deltacc-class-archive-") as scratch:
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.class_archive", "--workload", scratch],
            env=env,
            capture_output=True,
            text=True,
        )
    if done.returncode != 0 or not partial.is_file():
        output = (done.stdout + done.stderr)[-4000:]
        raise SystemExit(f"class archive: the workload failed (exit {done.returncode}):\n{output}")
    partial.replace(CLASS_ARCHIVE)
    _KEY_FILE.write_text(key)
    print(f"class archive: made {CLASS_ARCHIVE} ({CLASS_ARCHIVE.stat().st_size // 2**20} MiB)")
    return CLASS_ARCHIVE


def run_workload(scratch: Path) -> None:
    """The driver work whose classes go into the archive (run in the JVM that writes it)."""
    from pyspark.sql import functions as F

    from airflow_provider_deltacc.occ import classify
    from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

    spark = local_delta_session(app_name="deltacc-class-archive", warehouse_dir=str(scratch / "warehouse"))
    table = str(scratch / "t")
    rows = spark.range(8).select(F.col("id").cast("int").alias("id"), F.expr("IF(id < 4, 'a', 'b') AS p"))
    rows.write.format("delta").partitionBy("p").save(table)
    spark.sql(f"UPDATE delta.`{table}` SET id = id + 100 WHERE id = 1")
    spark.sql(f"DELETE FROM delta.`{table}` WHERE id = 2")
    spark.sql(
        f"MERGE INTO delta.`{table}` t USING (SELECT 3 AS id, 'a' AS p) s ON t.id = s.id AND t.p = s.p "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.sql(f"OPTIMIZE delta.`{table}` ZORDER BY (id)")
    twice = F.udf(lambda value: value * 2, "int")
    spark.read.format("delta").load(table).select(twice("id")).collect()
    conflict = _conflict(spark, table, scratch)
    if conflict is None or classify(conflict) is None:
        raise SystemExit(f"class archive: the workload's conflict did not happen: {conflict!r}")
    spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()
    spark.stop()


def _conflict(spark: SparkSession, table: str, scratch: Path) -> BaseException | None:
    """What an UPDATE of the whole table raises when held after reading its snapshot while an append to it
    commits."""
    from tests.support.gate import Gate
    from tests.support.held import gate_udf, hold

    gate = Gate(scratch)
    held_where = gate_udf(spark, gate, only=0)
    with hold(gate, lambda: spark.sql(f"UPDATE delta.`{table}` SET p = 'a' WHERE {held_where}(id)")) as call:
        spark.sql(f"INSERT INTO delta.`{table}` VALUES (50, 'a')")
    return call.error


if __name__ == "__main__":
    if sys.argv[1:2] == ["--workload"]:
        run_workload(Path(sys.argv[2]))
    else:
        make_archive()
