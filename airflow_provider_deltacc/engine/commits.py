"""Find the commits an operation made, by tagging them with a unique ``userMetadata`` token.

The latest version after an operation may belong to a concurrent writer, and Delta skips a duplicate
idempotent write silently, so "did we commit, and which version" is answered from the table's log: each
attempt sets ``spark.databricks.delta.commitInfo.userMetadata`` to a fresh token in its own session.

A job that carries a run token (the spec's ``outcome.run_token``, see :func:`tagging_run`) prefixes every
attempt's token with it, ``deltacc:<run token>:<attempt>``, so whoever submitted the job can find the commits
of that run in the log without the driver's report. The tag format and the reading of commit files without
Spark (:func:`~airflow_provider_deltacc.contract.commits.run_tag_prefix`,
:func:`~airflow_provider_deltacc.contract.commits.scan_for_txn_commit`, ...) live in
:mod:`airflow_provider_deltacc.contract.commits`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.commits import (
    TAG_PREFIX,
    TXN_SCAN_VERSIONS,
    metric_value,
    run_tag_prefix,
)
from airflow_provider_deltacc.contract.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_deltacc.engine.backend import CommitEntry

__all__ = [
    "CLOCK_SKEW_S",
    "USER_METADATA_CONF",
    "TaggedCommits",
    "find_tagged_commits",
    "find_txn_commit",
    "history_commits",
    "new_commit_tag",
    "tagging_run",
]

USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
# How many of the newest commits the history is read for first: the attempt's own and those of others that
# landed meanwhile.
_HISTORY_SLACK = 20
#: How far the storage's clock (commit timestamps) may be behind this process's when a search for an
#: attempt's commits is bounded by time.
CLOCK_SKEW_S = 600.0

log = logging.getLogger(__name__)


_RUN_TOKEN: ContextVar[str | None] = ContextVar("deltacc_run_token", default=None)


def new_commit_tag() -> str:
    """Return a unique token for one attempt's commits, under the current run's prefix when there is one."""
    run_token = _RUN_TOKEN.get()
    return f"{run_tag_prefix(run_token) if run_token else TAG_PREFIX}{uuid.uuid4().hex}"


@contextmanager
def tagging_run(run_token: str | None) -> Iterator[None]:
    """Tag the commits made inside the block with ``run_token`` (nothing changes when it is None).

    :param run_token: the spec's ``outcome.run_token``.
    """
    reset = _RUN_TOKEN.set(run_token)
    try:
        yield
    finally:
        _RUN_TOKEN.reset(reset)


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


def find_tagged_commits(
    spark: SparkSession, table: Table, tag: str, after_version: int | None, started_at: float
) -> TaggedCommits:
    """Return the commits whose ``userMetadata`` is ``tag`` (those of one attempt).

    :param spark: the session.
    :param table: the table.
    :param tag: the attempt's token.
    :param after_version: the version the attempt started from (-1 for a table it created), when known
        without a read; None otherwise (a Spark Connect session reads no version before writing).
    :param started_at: when the attempt started (epoch seconds): bounds the search when ``after_version``
        is None.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    found = backend_for(spark).tagged_commits(table, tag, after_version, started_at)
    metrics: dict[str, Any] = {}
    for _, _, commit_metrics in found:
        for key, value in commit_metrics.items():
            metrics[key] = metric_value(value)
    return TaggedCommits(
        versions=tuple(v for v, _, _ in found),
        operations=tuple(o for _, o, _ in found),
        metrics=metrics,
    )


def history_commits(
    spark: SparkSession, table: Table, tag: str, after_version: int | None, started_at: float
) -> list[CommitEntry]:
    """The commits tagged ``tag``, ascending, from ``DESCRIBE HISTORY``, newest first.

    The newest :data:`_HISTORY_SLACK` commits are read first; they hold the attempt's own commit unless many
    others landed since. The history is read further only when those do not reach back far enough: to
    ``after_version`` when it is known, else to commits older than ``started_at`` by more than
    :data:`CLOCK_SKEW_S` (commit timestamps come from the storage's clock, ``started_at`` from this one's).

    :param spark: the session.
    :param table: the table.
    :param tag: the attempt's token.
    :param after_version: the version the attempt started from, or None.
    :param started_at: when the attempt started (epoch seconds).
    """
    ref = table.sql
    floor = -1 if after_version is None else after_version
    oldest_wanted = started_at - CLOCK_SKEW_S
    limit = _HISTORY_SLACK
    while True:
        rows = spark.sql(f"DESCRIBE HISTORY {ref} LIMIT {int(limit)}").collect()
        versions = [int(r["version"]) for r in rows]
        if len(rows) < limit or not versions:
            break  # the whole history
        if after_version is not None:
            if min(versions) <= after_version + 1:
                break
            limit = max(versions) - after_version + _HISTORY_SLACK
        else:
            if _epoch(rows[-1]["timestamp"]) < oldest_wanted:
                break
            limit *= 4
    mine = sorted(
        (r for r in rows if r["userMetadata"] == tag and int(r["version"]) > floor),
        key=lambda r: int(r["version"]),
    )
    return [(int(r["version"]), str(r["operation"]), dict(r["operationMetrics"] or {})) for r in mine]


def _epoch(value: Any) -> float:
    """A history timestamp (a naive local datetime, as pyspark returns them) in epoch seconds."""
    return float(value.timestamp()) if hasattr(value, "timestamp") else float("-inf")


def find_txn_commit(
    spark: SparkSession,
    table: Table,
    app_id: str,
    txn_version: int,
    latest: int,
    *,
    max_versions: int = TXN_SCAN_VERSIONS,
) -> int | None:
    """Return the table version whose commit recorded ``(app_id, txn_version)``, or None if not found.

    This answers an ambiguous commit (a driver that died after committing, before reporting): the re-run is
    skipped as a duplicate and can say which commit was its own. The commit files are read newest first
    from ``latest``, at most ``max_versions`` of them; a commit file removed by log clean-up, or any read
    failure, gives None rather than failing the job.

    :param spark: the session.
    :param table: the table.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param latest: the newest table version to consider.
    :param max_versions: the most commit files to read.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    try:
        return backend_for(spark).txn_commit(table, app_id, txn_version, latest, max_versions)
    except Exception:  # informational only: never fail a skipped duplicate over it
        log.debug(
            "could not find the commit of txn %s version %s in %s", app_id, txn_version, table, exc_info=True
        )
    return None
