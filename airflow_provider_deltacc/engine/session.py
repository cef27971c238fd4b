"""Build a local, Delta-enabled SparkSession from the cached Delta jars."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_provider_deltacc.engine.delta_jars import cached_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DELTA_SPARK_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

#: Small-job settings for a local master (no Spark UI, few partitions), as for ``local[2]``;
#: :func:`local_defaults` sizes them to the cores of any local master.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}
#: The settings of :data:`LOCAL_DEFAULTS` that follow the number of cores the master gives.
CORE_SIZED_SETTINGS = (
    "spark.sql.shuffle.partitions",
    "spark.default.parallelism",
    "spark.databricks.delta.snapshotPartitions",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism",
)
#: ``local``, ``local[4]``, ``local[*]``, and the same with a retry count: ``local[4,2]``, ``local[*,2]``.
_LOCAL_MASTER_RE = re.compile(r"local(?:\[\s*(?P<cores>\*|\d+)\s*(?:,\s*\d+\s*)?\])?")


def local_master_cores(master: str) -> int | None:
    """The cores a local master runs on: 1 for ``local``, N for ``local[N]``, this machine's for ``local[*]``;
    None for any other master (a cluster, or ``local-cluster[...]``).

    :param master: the Spark master URL.
    """
    match = _LOCAL_MASTER_RE.fullmatch(master.strip())
    if match is None:
        return None
    cores = match["cores"]
    if cores == "*":
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        return len(available) if available else (os.cpu_count() or 1)
    return max(int(cores), 1) if cores else 1


def local_defaults(master: str) -> dict[str, str]:
    """:data:`LOCAL_DEFAULTS` with the partition counts set to the master's cores; empty for a master that
    is not local.

    :param master: the Spark master URL.
    """
    cores = local_master_cores(master)
    if cores is None:
        return {}
    return {**LOCAL_DEFAULTS, **dict.fromkeys(CORE_SIZED_SETTINGS, str(cores))}


def local_delta_session(
    *,
    app_name: str = "deltacc",
    master: str = "local[2]",
    warehouse_dir: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """Return a local SparkSession with the Delta extension and catalog, using the cached jars.

    If a session is already active in this process it is returned (Spark allows one JVM per process);
    the Delta settings are static, so a session started without them is rejected.

    :param app_name: Spark application name.
    :param master: Spark master URL; ``local[2]`` fits a 2-core laptop or CI machine.
    :param warehouse_dir: directory for managed tables (``spark.sql.warehouse.dir``).
    :param extra_conf: additional Spark settings, applied last.
    :param log_level: log level of the Spark context.
    """
    from pyspark.sql import SparkSession

    # The driver's Python workers must use this interpreter, not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master.startswith("local"):
        # A local driver only needs loopback; binding elsewhere is slow and may be blocked.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    active = SparkSession.getActiveSession()
    if active is not None:
        extensions = active.conf.get("spark.sql.extensions", "") or ""
        if "DeltaSparkSessionExtension" not in extensions:
            raise RuntimeError(
                "A SparkSession without the Delta extension is already running in this process; "
                "stop it before calling local_delta_session()."
            )
        return active

    jars = ",".join(str(p) for p in cached_jars())
    builder = SparkSession.builder.appName(app_name).master(master).config("spark.jars", jars)
    for key, value in {**local_defaults(master), "spark.driver.memory": "1g", **DELTA_SPARK_CONF}.items():
        builder = builder.config(key, value)
    if warehouse_dir:
        builder = builder.config("spark.sql.warehouse.dir", warehouse_dir)
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse_dir}")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    _quiet_handled_conflict_logs(session)
    return session


#: Delta logs every conflict it raises, with a full JVM stack trace, before Python sees it. The commit
#: loop classifies and reports each one in a single line, so these copies are only noise: they are off.
HANDLED_CONFLICT_LOGGERS = ("org.apache.spark.sql.delta.commands.MergeIntoCommand",)


def _quiet_handled_conflict_logs(session: SparkSession) -> None:
    jvm = session.sparkContext._jvm
    if jvm is None:
        return
    level = jvm.org.apache.logging.log4j.Level.OFF
    for name in HANDLED_CONFLICT_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
