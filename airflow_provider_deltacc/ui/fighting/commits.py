"""The table's commits of a range, read from the log's history rows (``DeltaTable.history()``), each with
who wrote it: an Airflow task (a commit report names the version, or the commit carries the provider's tag)
or a writer outside Airflow (what its commitInfo says), and those writers grouped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from airflow_provider_deltacc.contract.commits import TAG_PREFIX
from airflow_provider_deltacc.ui.fighting.reports import committed_versions, losses, task_label
from airflow_provider_deltacc.ui.filters import TimeRange

#: The most commits the page lists (newest first).
COMMIT_LIMIT = 500
#: commitInfo fields that say who wrote a commit outside Airflow, in the order shown.
_WHO_KEYS = ("engineInfo", "clientVersion", "userName", "userId", "clusterId", "job", "notebook")


def commit_time(row: Mapping[str, Any]) -> datetime | None:
    """A history row's commit time (its ``timestamp``, epoch milliseconds), None when it has none.

    :param row: one entry of ``DeltaTable.history()``.
    """
    try:
        return datetime.fromtimestamp(float(row["timestamp"]) / 1000.0, tz=UTC)
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return None


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def short_parameters(parameters: Any, *, width: int = 160) -> str:
    """``mode=Append, partitionBy=["p"]``: a commit's ``operationParameters`` on one short line.

    :param parameters: the parameters (a mapping; anything else is shown as it is).
    :param width: the most characters.
    """
    if not isinstance(parameters, Mapping):
        return _clip(_text(parameters), width) if parameters else ""
    return _clip(", ".join(f"{k}={_clip(_text(v), 60)}" for k, v in parameters.items()), width)


def is_provider_tag(user_metadata: Any) -> bool:
    """Whether a commit's ``userMetadata`` is the tag the provider puts on its own commits.

    :param user_metadata: the commitInfo's ``userMetadata``.
    """
    return isinstance(user_metadata, str) and user_metadata.startswith(TAG_PREFIX)


@dataclass(frozen=True)
class Writer:
    """Who wrote a commit.

    :param kind: ``airflow`` (a report names the version, or it carries the provider's tag) or ``outside``.
    :param label: ``dag.task``, ``an Airflow task`` or ``outside Airflow``.
    :param detail: the run, or what the commitInfo says about a writer outside Airflow.
    :param task: the ids of the task instance whose report names the version (for a link), else None.
    """

    kind: Literal["airflow", "outside"]
    label: str
    detail: str
    task: Mapping[str, Any] | None = None


def outside_identity(info: Mapping[str, Any]) -> str:
    """What a commit's commitInfo says about its writer: ``engineInfo=..., userName=...``.

    :param info: the history row.
    """
    said = [f"{key}={_clip(_text(info[key]), 80)}" for key in _WHO_KEYS if info.get(key) not in (None, "")]
    return ", ".join(said) or "the commit names no engine or user"


def writer_of(info: Mapping[str, Any], committed: Mapping[int, Mapping[str, Any]]) -> Writer:
    """Who wrote the commit ``info``.

    :param info: the history row.
    :param committed: the reports that committed each version (see
        :func:`~airflow_provider_deltacc.ui.fighting.reports.committed_versions`).
    """
    version = info.get("version")
    report = committed.get(version) if isinstance(version, int) else None
    tagged = is_provider_tag(info.get("userMetadata"))
    if report is not None:
        ids = {k: report.get(k) for k in ("dag_id", "run_id", "task_id", "map_index")}
        detail = f"run {report.get('run_id')}" + ("" if tagged else "; its report names this version")
        return Writer("airflow", task_label(report), detail, ids)
    if tagged:
        detail = "the provider's commit tag; no commit report of a DAG you may read names this version"
        return Writer("airflow", "an Airflow task", detail)
    detail = outside_identity(info)
    metadata = info.get("userMetadata")
    if metadata not in (None, ""):
        detail += f", userMetadata={_clip(_text(metadata), 80)}"
    return Writer("outside", "outside Airflow", detail)


@dataclass(frozen=True)
class CommitRow:
    """One commit of the table, as the page lists it.

    :param version: the table version.
    :param timestamp: when it was committed (None when the log does not say).
    :param operation: its Delta operation (``WRITE``, ``MERGE``, ...).
    :param parameters: its operation parameters, in short.
    :param writer: who wrote it.
    :param losers: how many recorded attempts lost a conflict to it.
    """

    version: int
    timestamp: datetime | None
    operation: str
    parameters: str
    writer: Writer
    losers: int = 0


@dataclass(frozen=True)
class OutsideWriter:
    """Writers outside Airflow that the commitInfo names alike: how many commits, of which operations.

    :param who: what the commitInfo says about them.
    :param commits: how many commits.
    :param operations: ``(operation, commits)``, most first.
    """

    who: str
    commits: int
    operations: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Commits:
    """The commits of a range, newest first, at most ``limit`` of them.

    :param rows: the commits listed.
    :param in_range: how many commits the range holds (of those read).
    :param limit: the most listed.
    :param outside: writers outside Airflow over every commit in the range.
    """

    rows: tuple[CommitRow, ...]
    in_range: int
    limit: int
    outside: tuple[OutsideWriter, ...] = ()

    @property
    def bounded(self) -> bool:
        """Whether the range holds more commits than are listed."""
        return self.in_range > len(self.rows)


def outside_writers(rows: Iterable[CommitRow], infos: Mapping[int, Mapping[str, Any]]) -> list[OutsideWriter]:
    """The writers outside Airflow among ``rows``, grouped by what their commitInfo says, most commits first.

    :param rows: commits.
    :param infos: the history row of each commit's version.
    """
    operations: dict[str, Counter[str]] = {}
    for row in rows:
        if row.writer.kind == "outside":
            who = outside_identity(infos.get(row.version, {}))
            operations.setdefault(who, Counter())[row.operation or "unknown"] += 1
    found = [
        OutsideWriter(who, sum(ops.values()), tuple(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))))
        for who, ops in operations.items()
    ]
    return sorted(found, key=lambda w: (-w.commits, w.who))


def table_commits(
    history_rows: Iterable[Mapping[str, Any]],
    reports: Sequence[Mapping[str, Any]],
    *,
    time_range: TimeRange | None = None,
    limit: int = COMMIT_LIMIT,
) -> Commits:
    """The table's commits in ``time_range``, newest first, each with who wrote it.

    :param history_rows: the log's history (``DeltaTable.history()``: commitInfo plus ``version``).
    :param reports: the table's commit reports, with their tasks' ids (see
        :func:`~airflow_provider_deltacc.ui.fighting.reports.read_table_reports`).
    :param time_range: only commits in it; None: every commit given.
    :param limit: the most commits listed.
    """
    committed = committed_versions(reports)
    lost = Counter(loss.version for loss in losses(reports) if loss.version is not None)
    infos = {
        int(r["version"]): r
        for r in history_rows
        if isinstance(r.get("version"), int) and (time_range is None or time_range.contains(commit_time(r)))
    }
    rows = [
        CommitRow(
            version,
            commit_time(info),
            str(info.get("operation") or ""),
            short_parameters(info.get("operationParameters")),
            writer_of(info, committed),
            lost.get(version, 0),
        )
        for version, info in sorted(infos.items(), reverse=True)
    ]
    return Commits(tuple(rows[:limit]), len(rows), limit, tuple(outside_writers(rows, infos)))
