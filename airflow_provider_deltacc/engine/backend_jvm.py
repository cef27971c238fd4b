"""The engine's reads on a classic session: the JVM ``DeltaLog`` and Hadoop file system, through py4j.

The snapshot is read through the JVM ``DeltaLog``: the same Delta code, storage settings and catalog that
will commit, and one consistent snapshot for version, metadata and recorded txn versions. Commit files are
read with ``DeltaLog.getChanges`` and the table's Hadoop file system, without a Spark job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.commits import scan_for_txn_commit
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.engine.backend import CommitEntry
from airflow_provider_deltacc.engine.commits import history_commits
from airflow_provider_deltacc.engine.jvm import DELTA_TABLE, HADOOP_PATH, IO_UTILS, java_class, scala_none
from airflow_provider_deltacc.engine.table import TableState, provider

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class JvmBackend:
    """See :class:`~airflow_provider_deltacc.engine.backend.SparkBackend`.

    :param spark: a classic session.
    """

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def table_exists(self, table: Table) -> bool:
        if table.is_path:
            return bool(java_class(self.spark, DELTA_TABLE).isDeltaTable(self._jspark, table.name))
        if not self.spark.catalog.tableExists(table.name):
            return False
        return provider(self.spark, table) == "delta"

    def path_exists(self, path: str) -> bool:
        hadoop_path = java_class(self.spark, HADOOP_PATH)(path)
        fs = hadoop_path.getFileSystem(self._jspark.sessionState().newHadoopConf())
        return bool(fs.exists(hadoop_path))

    def read_table_state(self, table: Table, app_ids: tuple[str, ...]) -> TableState:
        from pyspark.sql.types import StructType

        snapshot = _fresh_snapshot(self.delta_log(table), scala_none(self.spark))
        metadata = json.loads(snapshot.metadata().json())["metaData"]
        txn_versions: dict[str, int] = {}
        # Snapshot.transactions() runs a Spark job over the whole table state: only pay for it when asked.
        recorded: Any = snapshot.transactions() if app_ids else None
        for app_id in app_ids:
            found = recorded.get(app_id)
            if found.isDefined():
                txn_versions[app_id] = int(found.get())
        version = int(snapshot.version())
        state = TableState(
            partition_columns=tuple(metadata.get("partitionColumns") or ()),
            schema=StructType.fromJson(json.loads(metadata["schemaString"])),
            read_version=lambda: version,
            read_properties=lambda: dict(metadata.get("configuration") or {}),
            txn_versions=txn_versions,
        )
        _ = state.version  # known from the snapshot: no read later
        return state

    def state_if_exists(self, table: Table, app_ids: tuple[str, ...]) -> TableState | None:
        return self.read_table_state(table, app_ids) if self.table_exists(table) else None

    def forget_last_commit(self) -> None:
        """Nothing to forget: commits are found in the log after the attempt's snapshot version."""

    def tagged_commits(
        self, table: Table, tag: str, after_version: int | None, started_at: float
    ) -> list[CommitEntry]:
        from py4j.protocol import Py4JError, Py4JJavaError

        if after_version is not None:
            try:
                return self._tagged_from_log(table, tag, after_version)
            except Py4JJavaError:
                raise
            except Py4JError:  # DeltaLog.getChanges is internal: fall back to the history when it changes
                pass
        return history_commits(self.spark, table, tag, after_version, started_at)

    def _tagged_from_log(self, table: Table, tag: str, after_version: int) -> list[CommitEntry]:
        # DeltaLog.getChanges is (long, Option[CatalogTable], boolean) in Delta 4.x, (long, boolean) before.
        start = after_version + 1
        changes = call_known_signature(
            self.delta_log(table).getChanges, ((start, scala_none(self.spark), False), (start, False))
        )
        found: list[CommitEntry] = []
        while changes.hasNext():
            entry = changes.next()
            actions = entry._2().iterator()
            while actions.hasNext():
                action = actions.next()
                if action.getClass().getSimpleName() != "CommitInfo":
                    continue
                user_metadata = action.userMetadata()
                if user_metadata.isDefined() and user_metadata.get() == tag:
                    metrics: dict[str, Any] = {}
                    option = action.operationMetrics()
                    if option.isDefined():
                        pairs = option.get().iterator()
                        while pairs.hasNext():
                            pair = pairs.next()
                            metrics[str(pair._1())] = str(pair._2())
                    found.append((int(entry._1()), str(action.operation()), metrics))
        return found

    def txn_commit(
        self, table: Table, app_id: str, txn_version: int, latest: int, max_versions: int
    ) -> int | None:
        from py4j.protocol import Py4JJavaError

        hadoop_path, io_utils = java_class(self.spark, HADOOP_PATH), java_class(self.spark, IO_UTILS)
        log_path = self.delta_log(table).logPath()
        fs = log_path.getFileSystem(self._jspark.sessionState().newHadoopConf())

        def read_commit(version: int) -> str | None:
            try:
                stream = fs.open(hadoop_path(log_path, f"{version:020d}.json"))
            except Py4JJavaError:  # removed by log clean-up (or not backfilled yet)
                return None
            try:
                return str(io_utils.toString(stream, "UTF-8"))
            finally:
                stream.close()

        return scan_for_txn_commit(read_commit, app_id, txn_version, latest, max_versions)

    def explicit_confs(self, keys: tuple[str, ...]) -> dict[str, str | None]:
        # One JVM call per key: ``spark.conf.getAll`` copies the whole map entry by entry over py4j and ends
        # its iteration with a JVM exception, which costs more than the job it guards when operations are
        # small.
        jconf: Any = self._jspark.sessionState().conf()
        return {key: str(jconf.getConfString(key)) if jconf.contains(key) else None for key in keys}

    def apply_confs(self, changes: Mapping[str, str | None]) -> None:
        for key, value in changes.items():
            if value is None:
                self.spark.conf.unset(key)
            else:
                self.spark.conf.set(key, value)

    def check_parses(self, statement: str) -> None:
        self._jspark.sessionState().sqlParser().parsePlan(statement)

    def delta_log(self, table: Table) -> Any:
        """The JVM ``DeltaLog`` of a path or catalog table.

        :param table: the table.
        """
        jtables = java_class(self.spark, DELTA_TABLE)
        handle = (
            jtables.forPath(self._jspark, table.name)
            if table.is_path
            else jtables.forName(self._jspark, table.name)
        )
        return handle.deltaLog()

    @property
    def _jspark(self) -> Any:
        return self.spark._jsparkSession


def call_known_signature(method: Any, shapes: tuple[tuple[Any, ...], ...]) -> Any:
    """Call a JVM method with the first argument list it accepts.

    Scala default arguments are invisible to py4j and Delta's internal signatures change arity across
    releases, so callers list the known shapes, newest first. A Java exception from the call itself is
    raised, not taken for a wrong signature.

    :param method: the py4j method.
    :param shapes: the argument lists to try.
    :raises Py4JError: when no shape matches.
    """
    from py4j.protocol import Py4JError, Py4JJavaError

    for args in shapes:
        try:
            return method(*args)
        except Py4JJavaError:
            raise
        except Py4JError:
            continue
    raise Py4JError(f"{method} has none of the known signatures {shapes}")


def _fresh_snapshot(delta_log: Any, none: Any) -> Any:
    # DeltaLog.update has 3 parameters in Delta 4.x.
    return call_known_signature(delta_log.update, ((False, none, none), (False, none), (False,), ()))
