"""The commits that made writers lose: the winner of every recorded conflict on the table, by version, with
how many attempts lost to it, which tasks, and who wrote it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_provider_deltacc.ui.fighting.commits import Writer, commit_time, writer_of
from airflow_provider_deltacc.ui.fighting.reports import Loss, committed_versions, losses
from airflow_provider_deltacc.ui.filters import TimeRange


@dataclass(frozen=True)
class Winner:
    """A commit that made writers lose.

    :param version: its version.
    :param losers: how many recorded attempts lost to it.
    :param tasks: ``(dag.task, attempts lost)`` of the tasks that lost, most first.
    :param kinds: ``(conflict kind, count)``.
    :param operation: its operation (the log's, else the one the conflict names).
    :param writer: who wrote it, when the log read or a report says.
    :param timestamp: when it was committed, when the log read says.
    """

    version: int
    losers: int
    tasks: tuple[tuple[str, int], ...]
    kinds: tuple[tuple[str, int], ...]
    operation: str
    writer: Writer | None
    timestamp: datetime | None = None


@dataclass(frozen=True)
class Winners:
    """The winners of the recorded conflicts, newest version first, and the conflicts that name none.

    :param winners: by version.
    :param unnamed: lost attempts whose conflict names no winning version.
    """

    winners: tuple[Winner, ...]
    unnamed: int = 0


def _most_first(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def conflict_winners(
    reports: Sequence[Mapping[str, Any]],
    history_rows: Iterable[Mapping[str, Any]] = (),
    *,
    time_range: TimeRange | None = None,
) -> Winners:
    """The winner of every recorded conflict on the table, by version, with its losers.

    :param reports: the table's commit reports, with their tasks' ids.
    :param history_rows: the log's history, to say who wrote each winner (a version not read there is
        attributed from the reports, else left unknown).
    :param time_range: only conflicts whose losing attempt started in it; None: all.
    """
    infos = {int(r["version"]): r for r in history_rows if isinstance(r.get("version"), int)}
    committed = committed_versions(reports)
    by_version: dict[int, list[Loss]] = {}
    unnamed = 0
    for loss in losses(reports, time_range=time_range):
        if loss.version is None:
            unnamed += 1
        else:
            by_version.setdefault(loss.version, []).append(loss)
    winners = []
    for version, lost in sorted(by_version.items(), reverse=True):
        info = infos.get(version)
        if info is not None:
            writer: Writer | None = writer_of(info, committed)
            operation = str(info.get("operation") or "")
        else:
            writer = writer_of({"version": version}, committed) if version in committed else None
            operation = next((loss.operation for loss in lost if loss.operation), "")
        winners.append(
            Winner(
                version,
                len(lost),
                _most_first(Counter(loss.task for loss in lost)),
                _most_first(Counter(loss.kind for loss in lost)),
                operation,
                writer,
                commit_time(info) if info is not None else None,
            )
        )
    return Winners(tuple(winners), unnamed)
