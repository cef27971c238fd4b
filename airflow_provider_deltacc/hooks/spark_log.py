"""The Spark driver's own log in the task log: a log4j2 configuration at the level the task asks for.

spark-submit in client mode runs the driver in its own JVM, whose log4j output is the task log's bulk:
Spark's default profile logs at INFO from the JVM's first line on. A configuration file given to that JVM
at start-up (``-Dlog4j2.configurationFile`` in ``SPARK_SUBMIT_OPTS``) sets the level before anything is
logged. ``SPARK_SUBMIT_OPTS`` comes before ``spark.driver.extraJavaOptions`` on the JVM's command line,
so a configuration the user chose there still wins, and no Java option of the user or of the cluster's
``spark-defaults.conf`` is replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.spark_jars.delta_conf import HANDLED_CONFLICT_LOGGERS

#: log4j's levels, from the quietest to the most verbose.
SPARK_LOG_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
DEFAULT_SPARK_LOG_LEVEL = "WARN"
#: Java options for the JVM spark-submit starts (the driver, in client mode), read by Spark's launcher.
SUBMIT_OPTS_ENV = "SPARK_SUBMIT_OPTS"
CONFIG_FILE_NAME = "log4j2-deltacc.properties"

# Spark's own defaults (log4j2-defaults.properties) for chatty libraries, and Hadoop's warning that it runs
# without native libraries, which says nothing about the job.
_QUIET_LOGGERS = {
    "org.sparkproject.jetty": "warn",
    "org.sparkproject.jetty.util.component.AbstractLifeCycle": "error",
    "org.apache.parquet.CorruptStatistics": "error",
    "parquet.CorruptStatistics": "error",
    "org.apache.hadoop.util.NativeCodeLoader": "error",
}


def check_spark_log_level(value: object, *, task_id: str | None = None) -> str:
    """The level in upper case; a value that is not a log4j level is bad input naming the field.

    :param value: the ``spark_log_level`` argument.
    :param task_id: the task, named in the error when given.
    """
    level = value.strip().upper() if isinstance(value, str) else None
    if level in SPARK_LOG_LEVELS:
        return level
    where = f"{task_id}: " if task_id else ""
    raise DeltaCCInputError(
        f"{where}spark_log_level={value!r} is not a log level of Spark's log4j; use one of "
        f"{', '.join(SPARK_LOG_LEVELS)} (default {DEFAULT_SPARK_LOG_LEVEL}; INFO shows Spark's own progress)",
        field="spark_log_level",
        value=value,
    )


def log4j2_properties(level: str) -> str:
    """A log4j2 configuration: Spark's console layout on stderr, the root logger at ``level``, the
    chatty libraries quieter, and the conflict traces the commit loop reports itself off.

    :param level: a level of :data:`SPARK_LOG_LEVELS`.
    """
    lines = [
        f"# airflow-provider-deltacc: the Spark driver's log at {level} (spark_log_level)",
        f"rootLogger.level = {level.lower()}",
        "rootLogger.appenderRef.stderr.ref = console",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
    ]
    loggers = {**_QUIET_LOGGERS, **dict.fromkeys(HANDLED_CONFLICT_LOGGERS, "off")}
    for number, (name, logger_level) in enumerate(loggers.items()):
        lines += [f"logger.deltacc{number}.name = {name}", f"logger.deltacc{number}.level = {logger_level}"]
    return "\n".join(lines) + "\n"


def driver_log_env(directory: Path, level: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Write the configuration into ``directory`` and return the ``SPARK_SUBMIT_OPTS`` that gives it to the
    driver's JVM, followed by any options the environment already has there (so a configuration file
    chosen there still wins).

    :param directory: a directory that outlives the spark-submit run.
    :param level: a level of :data:`SPARK_LOG_LEVELS`.
    :param environ: the environment spark-submit inherits.
    """
    config = directory / CONFIG_FILE_NAME
    config.write_text(log4j2_properties(level), encoding="utf-8")
    option = f"-Dlog4j2.configurationFile={config.resolve().as_uri()}"  # a URI has no spaces to quote
    current = environ.get(SUBMIT_OPTS_ENV, "").strip()
    return {SUBMIT_OPTS_ENV: f"{option} {current}".strip()}
