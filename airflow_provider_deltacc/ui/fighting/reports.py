"""What the table's commit reports say: which task committed each version, which attempts lost a conflict
(and to which version), and reading the reports of the DAGs a user may read from the metadata DB.

The reports are as :meth:`~airflow_provider_deltacc.ui.data.TaskReport.with_ids` gives them: each with its
task's ids. Only :func:`read_table_reports` reads, and it imports Airflow only when called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_provider_deltacc.retries.tries import report_tries
from airflow_provider_deltacc.ui.data import REPORT_LIMIT
from airflow_provider_deltacc.ui.filters import TimeRange

_COMMITTED = ("committed", "skipped_duplicate")


def _task(report: Mapping[str, Any]) -> str:
    # The reports come from XCom with their task's ids (``TaskReport.with_ids``).
    dag_id, task_id = report.get("dag_id"), report.get("task_id")
    return f"{dag_id}.{task_id}" if dag_id and task_id else "an unnamed task"


def task_label(report: Mapping[str, Any]) -> str:
    """``dag.task`` (``dag.task[3]`` for a mapped task) of the task that wrote ``report``.

    :param report: a report with its task's ids.
    """
    name = _task(report)
    index = report.get("map_index")
    return f"{name}[{index}]" if isinstance(index, int) and index >= 0 else name


def _tries(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in report_tries(dict(report)) if isinstance(t, Mapping)]


def committed_versions(reports: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """Per table version, the report of the task that committed it (one of its tries said so).

    :param reports: the table's reports, with their tasks' ids.
    """
    found: dict[int, Mapping[str, Any]] = {}
    skipped: dict[int, Mapping[str, Any]] = {}
    for report in reports:
        for one_try in _tries(report):
            version = one_try.get("table_version")
            if isinstance(version, int) and one_try.get("status") == "committed":
                found.setdefault(version, report)
            elif isinstance(version, int) and one_try.get("status") in _COMMITTED:
                skipped.setdefault(version, report)
    return {**skipped, **found}


@dataclass(frozen=True)
class Loss:
    """One attempt that lost a conflict: to which version, of which kind, by which task.

    :param version: the winning version, None when the conflict does not name it.
    :param kind: the conflict kind, e.g. ``APPEND``.
    :param task: the losing task's ``dag.task``.
    :param operation: the winning operation as the conflict names it ("" when it does not).
    """

    version: int | None
    kind: str
    task: str
    operation: str


def losses(reports: Iterable[Mapping[str, Any]], *, time_range: TimeRange | None = None) -> list[Loss]:
    """Every lost attempt in the reports (whose attempt started in ``time_range`` when given).

    :param reports: the table's reports, with their tasks' ids.
    :param time_range: only attempts that started in it; None: all.
    """
    found = []
    for report in reports:
        loser = _task(report)
        for one_try in _tries(report):
            for attempt in one_try.get("attempts") or []:
                conflict = attempt.get("conflict") if isinstance(attempt, Mapping) else None
                if not isinstance(conflict, Mapping):
                    continue
                if time_range is not None and not time_range.contains(_epoch(attempt.get("started_at"))):
                    continue
                version = conflict.get("winning_version")
                found.append(
                    Loss(
                        version if isinstance(version, int) else None,
                        str(conflict.get("kind") or "").upper(),
                        loser,
                        str(conflict.get("winning_operation") or ""),
                    )
                )
    return found


def _epoch(seconds: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(seconds), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def read_table_reports(key: str, dag_ids: Iterable[str], since: datetime) -> tuple[list[Any], bool]:
    """The commit reports of the DAGs ``dag_ids`` on the table ``key``, newest first, and whether the read was
    bounded (the newest :data:`~airflow_provider_deltacc.ui.data.REPORT_LIMIT` reports of every table).

    Those pushed since ``since`` (a conflict of the range, and the commit that won it, are reported after
    it); when none is, the newest of any time, so the table's log can still be read through its writer.

    :param key: the table's key.
    :param dag_ids: the DAGs the user may read.
    :param since: the range's start.
    """
    from airflow.utils.session import create_session

    from airflow_provider_deltacc.ui.data import read_reports

    dag_ids = list(dag_ids)
    with create_session() as session:
        reports = read_reports(session, dag_ids=dag_ids, since=since)
        found = [r for r in reports if r.table == key]
        if not found:
            reports = read_reports(session, dag_ids=dag_ids)
            found = [r for r in reports if r.table == key]
    return found, len(reports) >= REPORT_LIMIT
