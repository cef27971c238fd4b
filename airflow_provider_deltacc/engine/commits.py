"""Find the commits an operation made, by tagging them with a unique ``userMetadata`` token.

The latest version after an operation may belong to a concurrent writer, and Delta skips a duplicate
idempotent write silently, so "did we commit, and which version" is answered from the table history: each
attempt sets ``spark.databricks.delta.commitInfo.userMetadata`` to a fresh token in its own session.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.table import delta_table, is_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
TAG_PREFIX = "deltacc:"
# Commits by others that may land between reading the latest version and reading the history.
_HISTORY_SLACK = 20


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
    jvm: Any = spark._jvm
    jspark: Any = spark._jsparkSession
    jtables = jvm.io.delta.tables.DeltaTable
    jtable = jtables.forPath(jspark, table) if is_path(table) else jtables.forName(jspark, table)
    changes = jtable.deltaLog().getChanges(after_version + 1, False)
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
