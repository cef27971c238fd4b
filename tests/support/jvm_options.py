"""The JVM options of the tests' Spark drivers and executors, carried by ``SPARK_SUBMIT_OPTS``, which every
spark-submit reads (the shared local session, a task's driver, a Connect server; tests/conftest.py sets it).

A test's Spark runs thousands of queries on a few rows each, on a 2-core box shared by two such JVMs, so what
costs CPU is compiling, not running. Measured on the conflict matrix's pairs on the shared session (CPU of the
whole box, same tests): HotSpot's tiered compilers 109 core-s; C1 alone 69; C1 alone and no generated code 51.

- **C1 alone and the serial collector** (``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC``): C2 compiles Spark's
  and the generated classes' methods again for code that runs on a handful of rows.
- **The tiered compilers' code cache for C1 alone** (``-XX:ReservedCodeCacheSize=240m``): without tiers the
  JVM reserves 48 MiB for compiled code, which Spark's and Delta's code fills in under a minute of a test's
  work ("CodeCache is full. Compiler has been disabled."); a long-lived session or Connect server then runs
  new code interpreted or flushes and compiles it again. 240 MiB is what the tiered JVM reserves by default.
  Measured on the conflict matrix alone on the box, run one after the other: 221 core-s with 48 MiB, 182 with
  240; the chaos run: 233 and 220.
- **No generated code** (``spark.sql.codegen.wholeStage=false``,
  ``spark.sql.codegen.factoryMode=NO_CODEGEN``): Spark's interpreted operators and expressions, which its own
  test suites run beside the generated ones, instead of Java source written and compiled with Janino for
  every new query.
- **The table's files from its checksum, and no DataFrame call sites**
  (``spark.databricks.delta.allFilesInCrc.enabled``, ``spark.sql.dataFrameQueryContext.enabled=false``):
  a table of a test has a handful of files, so Delta keeps them in each version's ``.crc`` and a new
  snapshot reads them from there instead of reconstructing its state with a Spark job; and Spark does not
  walk the Python-called thread's stack for every new column and plan node to name the DataFrame call site
  in an error (the provider classifies errors by class and Delta's message, never by that context). The
  conflicts are Delta's own either way: its conflict checker reads the winners' commits, not the checksum.
  Measured on the conflict matrix's 82 pairs alone on the box, same tests: 242 core-s without, 213 with.
- **The plain plan in each query's start event** (``spark.sql.ui.explainMode=simple``): Spark writes every
  query's physical plan into the event that announces it, for the UI (off in the tests); the default,
  ``formatted``, numbers every operator and lists its fields. Measured on 160 new-table writes, updates,
  merges and reads in one warm session, two runs each way, alternating: 157 and 160 core-s formatted, 138 and
  150 simple.
- **The run's class archive** (:mod:`tests.support.class_archive`), once it is made: a JVM maps Spark's and
  Delta's classes instead of reading, parsing and verifying them again; a task's driver spends a quarter less
  CPU. A JVM whose class path does not match the archive (a YARN container, a test's own ``SPARK_CONF_DIR``)
  runs without it, silently.

- **One partition in the long-lived sessions** (:data:`ONE_PARTITION`: each JVM-lane worker's local session,
  the shared Spark Connect server): their jobs read and write a handful of rows, so a stage of one task
  does the work of two at less cost; ``local[2]`` stays, so a transaction held at a gate leaves a task slot
  for its rival. Measured on the conflict matrix's same-partition pairs on one session, run twice each way:
  84-87 core-s with two partitions, 73-79 with one. The drivers and servers a task starts keep the
  provider's own settings for their master.

``SPARK_SUBMIT_OPTS`` and not a ``spark-defaults.conf``: spark-submit puts ``SPARK_CONF_DIR`` on the class
path, and the JVM maps no class archive whose class path holds a directory that is not empty. The Spark
settings travel as ``spark.*`` system properties, which a driver's SparkConf reads as its defaults: a test's
or a spec's own setting still wins.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_deltacc.spark_jars.delta_conf import CORE_SIZED_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
#: The run's class archive of Spark's and Delta's classes, made by ``python -m tests.support.class_archive``.
CLASS_ARCHIVE = ROOT / ".cache" / "class-archive" / "spark.jsa"

JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:ReservedCodeCacheSize=240m")
#: The partition settings of the tests' long-lived sessions (see the module's notes).
ONE_PARTITION = dict.fromkeys(CORE_SIZED_SETTINGS, "1")
SPARK_DEFAULTS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.databricks.delta.allFilesInCrc.enabled": "true",
    "spark.sql.dataFrameQueryContext.enabled": "false",
    "spark.sql.ui.explainMode": "simple",
}


def archive_options(archive: Path = CLASS_ARCHIVE) -> tuple[str, ...]:
    """The options that map ``archive``, with the JVM's notes on it silenced. A JVM started while the archive
    is still being made (it appears at once, renamed into place) runs without it."""
    return (f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off")


def spark_default_properties() -> tuple[str, ...]:
    """:data:`SPARK_DEFAULTS` as the ``-Dspark.*`` system properties a driver's SparkConf reads."""
    return tuple(f"-D{key}={value}" for key, value in SPARK_DEFAULTS.items())


def spark_submit_opts(archive: Path = CLASS_ARCHIVE) -> str:
    """``SPARK_SUBMIT_OPTS`` for a test run: the driver's JVM options and Spark defaults, and the same JVM
    options for the executors a driver starts on a standalone cluster."""
    jvm = " ".join((*JVM, *archive_options(archive)))
    spark = " ".join(spark_default_properties())
    return f'{jvm} {spark} "-Dspark.executor.defaultJavaOptions={jvm}"'
