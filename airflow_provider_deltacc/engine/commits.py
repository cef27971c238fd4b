"""Find the commits an operation made, by tagging them with a unique ``userMetadata`` token.

The latest version after an operation may belong to a concurrent writer, and Delta skips a duplicate
idempotent write silently, so "did we commit, and which version" is answered from the table history: each
attempt sets ``spark.databricks.delta.commitInfo.userMetadata`` to a fresh token in its own session.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.jvm import HADOOP_PATH, IO_UTILS, java_class, scala_none
from airflow_provider_deltacc.engine.table import call_known_signature, delta_table, jvm_delta_log

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
TAG_PREFIX = "deltacc:"
# Commits by others that may land between reading the latest version and reading the history.
_HISTORY_SLACK = 20
#: How many commits :func:`find_txn_commit` reads back to find the commit of a skipped duplicate.
TXN_SCAN_VERSIONS = 1000

log = logging.getLogger(__name__)


def new_commit_tag() -> str:
    """Return a unique token for one attempt's commits."""
    return f"{TAG_PREFIX}{uuid.uuid4().hex}"


@dataclass(frozen=True)
class TaggedCommits:
    """The commits carrying one tag.

    :param versions: their versions, ascending.
    :param operations: their Delta operation names, in the same order.
    :param metrics: their ``operationMetrics`` merged (later commits win), numbers as numbers.
    """

    versions: tuple[int, ...] = ()
    operations: tuple[str, ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)


def find_tagged_commits(spark: SparkSession, table: str, tag: str, after_version: int) -> TaggedCommits:
    """Return the commits after ``after_version`` whose ``userMetadata`` is ``tag``.

    Reads the commit files through the JVM ``DeltaLog.getChanges`` (no Spark job); falls back to
    ``DESCRIBE HISTORY`` if that internal API is not callable.

    :param spark: the session.
    :param table: the table.
    :param tag: the attempt's token.
    :param after_version: the version the attempt started from (-1 for a table it created).
    """
    from py4j.protocol import Py4JError, Py4JJavaError

    try:
        found = _from_log(spark, table, tag, after_version)
    except Py4JJavaError:
        raise
    except Py4JError:
        found = _from_history(spark, table, tag, after_version)
    metrics: dict[str, Any] = {}
    for _, _, commit_metrics in found:
        for key, value in commit_metrics.items():
            metrics[key] = _number(value)
    return TaggedCommits(
        versions=tuple(v for v, _, _ in found),
        operations=tuple(o for _, o, _ in found),
        metrics=metrics,
    )


Found = list[tuple[int, str, dict[str, Any]]]


def _from_log(spark: SparkSession, table: str, tag: str, after_version: int) -> Found:
    # DeltaLog.getChanges is (long, Option[CatalogTable], boolean) in Delta 4.x, (long, boolean) before.
    start = after_version + 1
    changes = call_known_signature(
        jvm_delta_log(spark, table).getChanges, ((start, scala_none(spark), False), (start, False))
    )
    found: Found = []
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


def _from_history(spark: SparkSession, table: str, tag: str, after_version: int) -> Found:
    handle = delta_table(spark, table)
    latest = int(handle.history(1).collect()[0]["version"])
    if latest <= after_version:
        return []
    rows = handle.history(latest - after_version + _HISTORY_SLACK).collect()
    mine = sorted(
        (r for r in rows if r["userMetadata"] == tag and int(r["version"]) > after_version),
        key=lambda r: int(r["version"]),
    )
    return [(int(r["version"]), str(r["operation"]), dict(r["operationMetrics"] or {})) for r in mine]


def _number(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def find_txn_commit(
    spark: SparkSession,
    table: str,
    app_id: str,
    txn_version: int,
    latest: int,
    *,
    max_versions: int = TXN_SCAN_VERSIONS,
) -> int | None:
    """Return the table version whose commit recorded ``(app_id, txn_version)``, or None if not found.

    This answers an ambiguous commit (a driver that died after committing, before reporting): the re-run is
    skipped as a duplicate and can say which commit was its own. The commit files are read newest first
    from ``latest`` through the table's Hadoop file system (no Spark job), at most ``max_versions`` of them;
    a commit file removed by log clean-up, or any read failure, gives None rather than failing the job.

    :param spark: the session.
    :param table: the table.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param latest: the newest table version to consider.
    :param max_versions: the most commit files to read.
    """
    from py4j.protocol import Py4JJavaError

    try:
        jspark: Any = spark._jsparkSession
        hadoop_path, io_utils = java_class(spark, HADOOP_PATH), java_class(spark, IO_UTILS)
        log_path = jvm_delta_log(spark, table).logPath()
        fs = log_path.getFileSystem(jspark.sessionState().newHadoopConf())
        for version in range(latest, max(-1, latest - max_versions), -1):
            try:
                stream = fs.open(hadoop_path(log_path, f"{version:020d}.json"))
            except Py4JJavaError:  # removed by log clean-up (or not backfilled yet): stop here
                break
            try:
                text = str(io_utils.toString(stream, "UTF-8"))
            finally:
                stream.close()
            if records_txn(text, app_id, txn_version):
                return version
    except Exception:  # informational only: never fail a skipped duplicate over it
        log.debug(
            "could not find the commit of txn %s version %s in %s", app_id, txn_version, table, exc_info=True
        )
    return None


def records_txn(commit_json: str, app_id: str, txn_version: int) -> bool:
    """Return True when a commit file's actions (JSON lines) record ``(app_id, txn_version)``.

    :param commit_json: the text of ``_delta_log/<version>.json``.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    """
    for line in commit_json.splitlines():
        if '"txn"' not in line:
            continue
        txn = json.loads(line).get("txn")
        if isinstance(txn, dict) and txn.get("appId") == app_id and txn.get("version") == txn_version:
            return True
    return False
