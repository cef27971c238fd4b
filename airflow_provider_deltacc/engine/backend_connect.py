"""The engine's reads on a Spark Connect session: SQL and the server's own file readers, no JVM objects.

* Table facts come from ``DESCRIBE DETAIL`` (location, partition columns, properties), the version from
  ``DESCRIBE HISTORY``, the schema from analysing a read of the table.
* Commits are found by their tag in ``DESCRIBE HISTORY``.
* Recorded txn versions are read from ``_delta_log`` itself, with the server's Parquet and JSON readers: the
  txn actions of the last checkpoint and of every commit after it. Delta only records a version above the
  one recorded before, so the highest version per app id is the recorded one. Entries older than
  ``delta.setTransactionRetentionDuration`` are dropped, as Delta's own log replay drops them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.backend import CommitEntry
from airflow_provider_deltacc.engine.commits import history_commits
from airflow_provider_deltacc.engine.errors import InputError
from airflow_provider_deltacc.engine.retention import parse_interval_hours
from airflow_provider_deltacc.engine.table import TableState, is_path, provider, table_frame, table_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TXN_SCHEMA_DDL = "txn STRUCT<appId: STRING, version: BIGINT, lastUpdated: BIGINT>"
TXN_RETENTION_PROPERTY = "delta.setTransactionRetentionDuration"
_NOT_FOUND = (
    "PATH_NOT_FOUND",
    "DELTA_MISSING_DELTA_TABLE",
    "DELTA_TABLE_NOT_FOUND",
    "TABLE_OR_VIEW_NOT_FOUND",
)


class ConnectBackend:
    """See :class:`~airflow_provider_deltacc.engine.backend.SparkBackend`.

    :param spark: a Spark Connect session.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def table_exists(self, table: str) -> bool:
        if not is_path(table):
            return bool(self.spark.catalog.tableExists(table)) and provider(self.spark, table) == "delta"
        return self._delta_detail(table) is not None

    def path_exists(self, path: str) -> bool:
        try:
            self.spark.read.format("text").load(path).schema  # noqa: B018 - analysis lists the path
        except Exception as exc:
            if _condition(exc) == "PATH_NOT_FOUND":
                return False
            raise
        return True

    def read_table_state(self, table: str, app_ids: tuple[str, ...]) -> TableState:
        state = self.state_if_exists(table, app_ids)
        if state is None:
            raise InputError("table", table, "the table disappeared or is not a Delta table")
        return state

    def state_if_exists(self, table: str, app_ids: tuple[str, ...]) -> TableState | None:
        if not is_path(table) and not self.table_exists(table):
            return None  # DESCRIBE DETAIL describes non-Delta catalog tables too
        detail = self._delta_detail(table)
        if detail is None:
            return None
        version = self._latest_version(table)
        properties = {str(k): str(v) for k, v in (detail["properties"] or {}).items()}
        txn_versions = (
            self._txn_versions(str(detail["location"]), version, app_ids, properties) if app_ids else {}
        )
        return TableState(
            version=version,
            partition_columns=tuple(detail["partitionColumns"] or ()),
            schema=table_frame(self.spark, table).schema,
            properties=properties,
            txn_versions=txn_versions,
        )

    def tagged_commits(self, table: str, tag: str, after_version: int) -> list[CommitEntry]:
        return history_commits(self.spark, table, tag, after_version)

    def txn_commit(
        self, table: str, app_id: str, txn_version: int, latest: int, max_versions: int
    ) -> int | None:
        from pyspark.sql.connect import functions as F

        log = _log_dir(str(self._detail(table)["location"]))
        limit = max(1, latest - max(-1, latest - max_versions))
        history = self.spark.sql(f"DESCRIBE HISTORY {table_sql(table)} LIMIT {int(limit)}").collect()
        versions = [int(r["version"]) for r in history if int(r["version"]) <= latest]
        if not versions:
            return None
        found = (
            self._txn_actions([_commit_file(log, v) for v in versions])
            .where((F.col("appId") == F.lit(app_id)) & (F.col("version") == F.lit(txn_version)))
            .select(F.col("_metadata.file_name").alias("file"))
            .collect()
        )
        return max((int(str(r["file"]).split(".", 1)[0]) for r in found), default=None)

    def explicit_confs(self, keys: tuple[str, ...]) -> dict[str, str | None]:
        # A Connect session has no "set explicitly" view; a registered default reads as set, and restoring it
        # sets it explicitly, which changes nothing.
        return {key: self.spark.conf.get(key, None) for key in keys}

    def check_parses(self, statement: str) -> None:
        # EXPLAIN parses the statement and never runs it; an analysis error is reported in its output rather
        # than raised, so only a statement that does not parse raises here.
        self.spark.sql(f"EXPLAIN {statement}").collect()

    def _detail(self, table: str) -> Any:
        return self.spark.sql(f"DESCRIBE DETAIL {table_sql(table)}").first()

    def _delta_detail(self, table: str) -> Any:
        """``DESCRIBE DETAIL`` of a Delta table; None when there is no table or it is not Delta."""
        try:
            detail = self._detail(table)
        except Exception as exc:
            if _condition(exc) in _NOT_FOUND:
                return None
            raise
        return detail if str(detail["format"]).lower() == "delta" else None

    def _latest_version(self, table: str) -> int:
        row = self.spark.sql(f"DESCRIBE HISTORY {table_sql(table)} LIMIT 1").first()
        assert row is not None
        return int(row["version"])

    def _txn_versions(
        self, location: str, latest: int, app_ids: tuple[str, ...], properties: dict[str, str]
    ) -> dict[str, int]:
        from pyspark.sql.connect import functions as F

        log = _log_dir(location)
        checkpoint = self._last_checkpoint(log)
        frames: list[DataFrame] = []
        if checkpoint is not None:
            frames.append(self._checkpoint_txn_actions(log, checkpoint))
        commits = [_commit_file(log, v) for v in range((checkpoint or -1) + 1, latest + 1)]
        if commits:
            frames.append(self._txn_actions(commits).select("appId", "version", "lastUpdated"))
        if not frames:
            return {}
        actions = frames[0]
        for frame in frames[1:]:
            actions = actions.unionByName(frame)
        actions = actions.where(F.col("appId").isin(list(app_ids)))
        retention = properties.get(TXN_RETENTION_PROPERTY)
        if retention is not None:
            oldest_ms = int(time.time() * 1000 - parse_interval_hours(retention) * 3_600_000)
            actions = actions.where(F.col("lastUpdated").isNull() | (F.col("lastUpdated") >= oldest_ms))
        rows = actions.groupBy("appId").agg(F.max("version").alias("version")).collect()
        return {str(r["appId"]): int(r["version"]) for r in rows}

    def _last_checkpoint(self, log: str) -> int | None:
        try:
            row = self.spark.read.json(f"{log}/_last_checkpoint").select("version").first()
        except Exception as exc:
            if _condition(exc) == "PATH_NOT_FOUND":
                return None  # no checkpoint yet: every commit is a JSON file
            raise
        return None if row is None or row["version"] is None else int(row["version"])

    def _checkpoint_txn_actions(self, log: str, version: int) -> DataFrame:
        # Classic, multi-part and V2 Parquet checkpoints all match this glob; V2 JSON checkpoints do not.
        prefix = f"{log}/{version:020d}.checkpoint"
        try:
            frame = self.spark.read.parquet(f"{prefix}*.parquet")
            frame.schema  # noqa: B018 - analysis finds out whether the glob matched
        except Exception as exc:
            if _condition(exc) != "PATH_NOT_FOUND":
                raise
            return self._txn_actions([f"{prefix}.*.json"]).select("appId", "version", "lastUpdated")
        return frame.where("txn IS NOT NULL").select("txn.appId", "txn.version", "txn.lastUpdated")

    def _txn_actions(self, paths: list[str]) -> DataFrame:
        return (
            self.spark.read.schema(TXN_SCHEMA_DDL)
            .json(paths)
            .where("txn IS NOT NULL")
            .select("txn.appId", "txn.version", "txn.lastUpdated", "_metadata")
        )


def _log_dir(location: str) -> str:
    return location.rstrip("/") + "/_delta_log"


def _commit_file(log: str, version: int) -> str:
    return f"{log}/{version:020d}.json"


def _condition(exc: BaseException) -> str | None:
    getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    try:
        condition = getter() if getter is not None else None
    except Exception:  # a PySpark error without an error class
        return None
    return str(condition).split(".", 1)[0] if condition else None
