"""VACUUM retention on Spark: whether this Delta ignores a RETAIN clause. The table's own retention
(``parse_interval_hours``, ``table_retention_hours``) is read in
:mod:`airflow_provider_deltacc.contract.retention`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RETENTION_CHECK_CONF", "RETENTION_WINDOW_IGNORE_CONF", "retention_window_ignored"]

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
#: Delta >= 4.1 ignores a non-zero RETAIN (using the table property instead) while this is true.
RETENTION_WINDOW_IGNORE_CONF = "spark.databricks.delta.vacuum.retentionWindowIgnore.enabled"


def retention_window_ignored(spark: SparkSession) -> bool:
    """Return True when this Delta ignores a non-zero RETAIN (Delta >= 4.1 with the default conf).

    ``SET <key>`` answers with the value in force, the registered default included; a Delta without the
    setting (<= 4.0) answers ``<undefined>``. Delta registers its settings when it first loads a table, which
    the VACUUM has done (it read the table's state) before it asks.

    :param spark: the session.
    """
    row = spark.sql(f"SET {RETENTION_WINDOW_IGNORE_CONF}").first()
    return row is not None and str(row["value"]).strip().lower() == "true"
