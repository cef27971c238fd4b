"""The engine's reads on a Spark Connect session: SQL and the server's own file readers, no JVM objects.

* Table facts come from ``DESCRIBE TABLE EXTENDED`` (location, partition columns) and ``SHOW TBLPROPERTIES``,
  the version from ``DESCRIBE HISTORY``, the schema from analysing a read of the table.
* An attempt's commit is the session's last commit when its ``commitInfo`` carries the attempt's tag: read
  from this machine's disk when the table is there (a Connect server beside the worker), else by the
  server; otherwise it is found by its tag in ``DESCRIBE HISTORY``.
* Recorded txn versions are read from ``_delta_log`` itself, with the server's Parquet and JSON readers: the
  txn actions of the last checkpoint and of every commit after it. Delta only records a version above the
  one recorded before, so the highest version per app id is the recorded one. Entries older than
  ``delta.setTransactionRetentionDuration`` are dropped, as Delta's own log replay drops them.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.checkpoint_names import newest_complete_checkpoint
from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.retention import parse_interval_hours
from airflow_provider_deltacc.contract.table import Table, local_path
from airflow_provider_deltacc.engine.backend import CommitEntry
from airflow_provider_deltacc.engine.commits import history_commits
from airflow_provider_deltacc.engine.table import TableState, table_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TXN_SCHEMA_DDL = "txn STRUCT<appId: STRING, version: BIGINT, lastUpdated: BIGINT>"
TXN_RETENTION_PROPERTY = "delta.setTransactionRetentionDuration"
#: Delta sets it to the version of the session's latest commit, to any table.
LAST_COMMIT_CONF = "spark.databricks.delta.lastCommitVersionInSession"
_PROTOCOL_PROPERTIES = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.feature.")
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

    def table_exists(self, table: Table) -> bool:
        return self._describe(table) is not None

    def path_exists(self, path: str) -> bool:
        try:
            self.spark.read.format("text").load(path).schema  # noqa: B018 - analysis lists the path
        except Exception as exc:
            if _condition(exc) == "PATH_NOT_FOUND":
                return False
            raise
        return True

    def read_table_state(self, table: Table, app_ids: tuple[str, ...]) -> TableState:
        state = self.state_if_exists(table, app_ids)
        if state is None:
            raise InputError("table", table.name, "the table disappeared or is not a Delta table")
        return state

    def state_if_exists(self, table: Table, app_ids: tuple[str, ...]) -> TableState | None:
        described = self._describe(table)
        if described is None:
            return None
        txn_versions: dict[str, int] = {}
        if app_ids:  # the txn actions are read up to the snapshot's version, so it is read first
            version = self._latest_version(table)
            txn_versions = self._txn_versions(described.location, version, app_ids, self._properties(table))
        return TableState(
            read_version=(lambda: version) if app_ids else (lambda: self._latest_version(table)),
            partition_columns=described.partition_columns,
            schema=table_frame(self.spark, table).schema,
            read_properties=lambda: self._properties(table),
            txn_versions=txn_versions,
        )

    def forget_last_commit(self) -> None:
        self.apply_confs({LAST_COMMIT_CONF: None})

    def tagged_commits(
        self, table: Table, tag: str, after_version: int | None, started_at: float
    ) -> list[CommitEntry]:
        # Delta notes the version of the session's last commit: when it is this attempt's (its tag is in that
        # commit file), one small read answers. Anything else (no note, another table's commit, a commit file
        # gone) is settled by the history.
        last = self.spark.conf.get(LAST_COMMIT_CONF, None)
        if last is not None:
            entry = self._commit_if_tagged(table, int(last), tag)
            if entry is not None:
                return [entry]
        return history_commits(self.spark, table, tag, after_version, started_at)

    def _commit_if_tagged(self, table: Table, version: int, tag: str) -> CommitEntry | None:
        """The commit ``version`` of ``table`` when its ``commitInfo`` carries ``tag``, else None."""
        location = table.name if table.is_path else getattr(self._describe(table), "location", None)
        if location is None:
            return None
        # A table on this machine's file system (a Connect server beside the worker) is read here, not by a
        # Spark job; a file that is missing or lacks the tag (another machine's disk) is read by the server.
        found = _tagged_entry(_local_commit_lines(location, version), version, tag)
        if found is not None:
            return found
        try:
            lines = [
                str(r[0]) for r in self.spark.read.text(_commit_file(_log_dir(location), version)).collect()
            ]
        except Exception as exc:
            if _condition(exc) == "PATH_NOT_FOUND":
                return None
            raise
        return _tagged_entry(lines, version, tag)

    def txn_commit(
        self, table: Table, app_id: str, txn_version: int, latest: int, max_versions: int
    ) -> int | None:
        from pyspark.sql.connect import functions as F

        described = self._describe(table)
        if described is None:
            return None
        log = _log_dir(described.location)
        limit = max(1, latest - max(-1, latest - max_versions))
        history = self.spark.sql(f"DESCRIBE HISTORY {table.sql} LIMIT {int(limit)}").collect()
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
        # sets it explicitly, which changes nothing. All keys in one request (``spark.conf.get`` asks one).
        if not keys:
            return {}
        from pyspark.sql.connect import proto

        asked = proto.ConfigRequest.GetWithDefault(pairs=[proto.KeyValue(key=key) for key in keys])
        answer = self._config(proto.ConfigRequest.Operation(get_with_default=asked))
        return dict(answer.pairs)

    def apply_confs(self, changes: Mapping[str, str | None]) -> None:
        # ``spark.conf.set``/``unset`` send a request per key; the protocol takes them all at once.
        from pyspark.sql.connect import proto

        pairs = [proto.KeyValue(key=key, value=value) for key, value in changes.items() if value is not None]
        unset = [key for key, value in changes.items() if value is None]
        if pairs:
            self._config(proto.ConfigRequest.Operation(set=proto.ConfigRequest.Set(pairs=pairs)))
        if unset:
            self._config(proto.ConfigRequest.Operation(unset=proto.ConfigRequest.Unset(keys=unset)))

    def _config(self, operation: Any) -> Any:
        """One config request to the server; its warnings (a deprecated key, ...) as Python warnings."""
        answer = self.spark.client.config(operation)
        for warning in answer.warnings:
            warnings.warn(warning, stacklevel=3)
        return answer

    def check_parses(self, statement: str) -> None:
        # EXPLAIN parses the statement and never runs it; an analysis error is reported in its output rather
        # than raised, so only a statement that does not parse raises here.
        self.spark.sql(f"EXPLAIN {statement}").collect()

    def _describe(self, table: Table) -> _Description | None:
        """The table's partition columns and location; None when there is no table or it is not Delta.

        ``DESCRIBE TABLE EXTENDED`` reads the table's metadata only. ``DESCRIBE DETAIL`` would also count the
        table's files, which rebuilds the whole snapshot state (a Spark job) after every commit.
        """
        if not table.is_path and not self.spark.catalog.tableExists(table.name):
            return None  # asked first: a missing catalog table fails DESCRIBE with a logged error
        try:
            rows = self.spark.sql(f"DESCRIBE TABLE EXTENDED {table.sql}").collect()
        except Exception as exc:
            if _condition(exc) in _NOT_FOUND:
                return None
            raise
        return _Description.parse(table, [(str(r[0] or ""), str(r[1] or "")) for r in rows])

    def _properties(self, table: Table) -> dict[str, str]:
        rows = self.spark.sql(f"SHOW TBLPROPERTIES {table.sql}").collect()
        return {
            str(r["key"]): str(r["value"])
            for r in rows
            if not str(r["key"]).startswith(_PROTOCOL_PROPERTIES)  # the protocol's, not the metadata's
        }

    def _latest_version(self, table: Table) -> int:
        row = self.spark.sql(f"DESCRIBE HISTORY {table.sql} LIMIT 1").first()
        assert row is not None
        return int(row["version"])

    def _txn_versions(
        self, location: str, latest: int, app_ids: tuple[str, ...], properties: dict[str, str]
    ) -> dict[str, int]:
        from pyspark.sql.connect import functions as F

        log = _log_dir(location)
        checkpoint = self._last_checkpoint(log, latest)
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

    def _last_checkpoint(self, log: str, latest: int) -> int | None:
        """The version of the newest complete checkpoint at or below ``latest``, None before the first.

        The checkpoint files themselves are listed (their contents are not read): a Spark file source skips
        names starting with ``_``, so ``_delta_log/_last_checkpoint`` cannot be read over Connect.
        """
        try:
            listed = (
                self.spark.read.format("binaryFile")
                .option("pathGlobFilter", "*.checkpoint*")
                .load(log)
                .select("path")
                .collect()
            )
        except Exception as exc:
            if _condition(exc) == "PATH_NOT_FOUND":
                return None
            raise
        return newest_complete_checkpoint([str(row["path"]) for row in listed], latest)

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


@dataclass(frozen=True)
class _Description:
    """What ``DESCRIBE TABLE EXTENDED`` says of a Delta table."""

    partition_columns: tuple[str, ...]
    location: str

    @classmethod
    def parse(cls, table: Table, rows: list[tuple[str, str]]) -> _Description | None:
        """Read the ``# Partition Information`` and ``# Detailed Table Information`` sections; None when the
        provider is not Delta.

        :param table: the table as named (a path table's location when the output names none).
        :param rows: (col_name, data_type) of every output row.
        """
        partitions: list[str] = []
        details: dict[str, str] = {}
        section = ""
        for name, value in rows:
            if name == "# col_name":
                continue  # the header line of a section's table
            if name.startswith("# "):
                section = name
                continue
            if not name.strip():
                section = ""
            elif section == "# Partition Information":
                partitions.append(name)
            elif section == "# Detailed Table Information":
                details[name] = value
        if details.get("Provider", "").lower() != "delta":
            return None
        return cls(tuple(partitions), details.get("Location") or table.name)


def _local_commit_lines(location: str, version: int) -> list[str]:
    """The lines of commit ``version`` read from this machine's file system; none when it is not there."""
    path = local_path(location)
    if path is None:
        return []
    try:
        return (path / "_delta_log" / f"{version:020d}.json").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def _tagged_entry(lines: list[str], version: int, tag: str) -> CommitEntry | None:
    """Commit ``version`` when its ``commitInfo`` line carries ``tag``, else None."""
    for line in lines:
        if '"commitInfo"' not in line:
            continue
        info = json.loads(line).get("commitInfo") or {}
        if info.get("userMetadata") == tag:
            metrics = {str(k): str(v) for k, v in (info.get("operationMetrics") or {}).items()}
            return (version, str(info.get("operation", "")), metrics)
    return None


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
