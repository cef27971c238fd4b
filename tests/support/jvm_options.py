"""The JVM options of the tests' Spark drivers and executors, carried by ``SPARK_SUBMIT_OPTS``, which every
spark-submit reads (a local session, a task's driver, a Connect server; tests/conftest.py sets it).

- A driver or an executor that lives seconds runs C1 alone with the serial collector: they spend about a
  quarter less CPU than HotSpot's defaults on a 2-core box shared by two such JVMs.
- It loads its classes from the run's class archive (:mod:`tests.support.class_archive`) when there is one:
  a fifth less CPU again, and 4-5 s less for each driver's first Delta commit. A JVM whose class path does not
  match the archive (a YARN container, a test's own ``SPARK_CONF_DIR``) runs without it, silently.
- A driver that lives the whole run (the shared local session, a Connect server) runs thousands of jobs,
  where C2's compiled code pays back: :data:`LONG_LIVED_DRIVER_CONF` gives it HotSpot's tiered compilation
  back (driver options come after ``SPARK_SUBMIT_OPTS`` on spark-submit's java command line, and win).

``SPARK_SUBMIT_OPTS`` and not a ``spark-defaults.conf``: spark-submit puts ``SPARK_CONF_DIR`` on the class
path, and the JVM maps no class archive whose class path holds a directory that is not empty.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The run's class archive of Spark's and Delta's classes, made by ``python -m tests.support.class_archive``.
CLASS_ARCHIVE = ROOT / ".cache" / "class-archive" / "spark.jsa"

SHORT_LIVED_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
#: ``--conf`` settings of a driver that lives the whole run.
LONG_LIVED_DRIVER_CONF = {"spark.driver.defaultJavaOptions": "-XX:TieredStopAtLevel=4"}


def archive_options(archive: Path = CLASS_ARCHIVE) -> tuple[str, ...]:
    """The options that map ``archive`` (none when it is missing), with the JVM's notes on it silenced."""
    return (f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off") if archive.is_file() else ()


def spark_submit_opts(archive: Path = CLASS_ARCHIVE) -> str:
    """``SPARK_SUBMIT_OPTS`` for a test run: the driver's options, and the same for the executors a driver
    starts on a standalone cluster (a ``spark.*`` system property is a setting of the driver's SparkConf)."""
    options = " ".join((*SHORT_LIVED_JVM, *archive_options(archive)))
    return f'{options} "-Dspark.executor.defaultJavaOptions={options}"'
