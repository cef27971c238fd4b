"""The Spark settings of a Delta session the provider starts: the Delta extension and catalog, small-job
defaults for a local master, and the JVM loggers it quiets.

Plain Python: the hook puts them on the spark-submit command line, the Spark Connect server gets them, and
the in-process mode's local session
(:func:`airflow_provider_deltacc.spark_jars.local_session.local_delta_session`) is built with them.
"""

from __future__ import annotations

import os
import re

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


#: Delta logs every conflict it raises, with a full JVM stack trace, before Python sees it. The commit
#: loop classifies and reports each one in a single line, so these copies are only noise: they are off.
HANDLED_CONFLICT_LOGGERS = ("org.apache.spark.sql.delta.commands.MergeIntoCommand",)
