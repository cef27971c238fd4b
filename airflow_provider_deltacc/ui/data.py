"""What the Delta conflicts view reads of what Airflow stores (the page's sums come from the provider's
summary table, :mod:`.summary_fill`, which these reports fill).

The commit reports come from XCom (``deltacc_report``, one per task instance, listing every try); a task
instance whose report is gone (a try is running) falls back to its tries in the task state store; the
retry reasons Airflow kept come from ``task_instance_history``. Everything goes through Airflow's models.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.contract.try_times import TryTimes
from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY, TRIES_KEY, report_tries

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

#: The most recent reports a page reads (a bound on the page's work on a large metadata DB).
REPORT_LIMIT = 2000


@dataclass
class TaskReport:
    """One task instance's report, with where it ran."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    report: dict[str, Any]

    @property
    def tries(self) -> list[dict[str, Any]]:
        return report_tries(self.report)

    @property
    def table(self) -> str:
        return report_table(self.report)

    def with_ids(self) -> dict[str, Any]:
        """The report with its task's ids, as the advisor reads reports."""
        ids = {"dag_id": self.dag_id, "task_id": self.task_id, "run_id": self.run_id}
        return {**self.report, **ids, "map_index": self.map_index}


def report_table(report: Mapping[str, Any]) -> str:
    """The key of the table a report names (one per table, however the task spelled it), "" when none."""
    table = report.get("table")
    return table_key(Table(table)) if isinstance(table, str) and table.strip() else ""


@dataclass
class Bucket:
    """One day of one table: commits, conflicts by kind, Airflow retries, wasted seconds, and seconds writers
    waited for their turn (see :func:`waited_s`)."""

    day: str
    commits: int = 0
    conflicts: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    wasted_s: float = 0.0
    waited_s: float = 0.0


def xcom_value(row: Any) -> Any:
    """An XCom row's value (a row with ``value``), None when it cannot be read."""
    from airflow.models.xcom import XComModel

    try:
        return XComModel.deserialize_value(row)
    except Exception:
        return None


def read_reports(
    session: Session,
    *,
    dag_ids: Iterable[str] | None,
    limit: int = REPORT_LIMIT,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[TaskReport]:
    """The newest ``deltacc_report`` XComs (of ``dag_ids`` when given; None: every DAG), newest first;
    pushed in [``since``, ``until``) when given."""
    from airflow.models.xcom import XComModel

    columns = (XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.map_index, XComModel.value)
    query = session.query(*columns).filter(XComModel.key == REPORT_XCOM_KEY)
    if dag_ids is not None:
        query = query.filter(XComModel.dag_id.in_(list(dag_ids)))
    if since is not None:
        query = query.filter(XComModel.timestamp >= since)
    if until is not None:
        query = query.filter(XComModel.timestamp < until)
    rows = query.order_by(XComModel.timestamp.desc()).limit(limit)
    found = []
    for row in rows:
        value = xcom_value(row)
        if isinstance(value, Mapping):
            found.append(TaskReport(row.dag_id, row.run_id, row.task_id, row.map_index, dict(value)))
    return found


def _day(seconds: Any) -> str:
    try:
        return datetime.fromtimestamp(float(seconds), tz=UTC).strftime("%Y-%m-%d")
    except (TypeError, ValueError, OverflowError):
        return "unknown"


def buckets_by_table(reports: Iterable[TaskReport]) -> dict[str, list[Bucket]]:
    """Per table, per day (oldest first): what every try of every report did."""
    tables: dict[str, dict[str, Bucket]] = {}
    for task in reports:
        for one_try in task.tries:
            attempts = [a for a in one_try.get("attempts") or [] if isinstance(a, Mapping)]
            started = attempts[0].get("started_at") if attempts else one_try.get("ended_at")
            day = _day(started if started is not None else one_try.get("ended_at"))
            bucket = tables.setdefault(task.table, {}).setdefault(day, Bucket(day))
            if one_try.get("status") in ("committed", "skipped_duplicate"):
                bucket.commits += 1
            if one_try.get("decision") == "retry":
                bucket.retries += 1
            for attempt in attempts:
                conflict = attempt.get("conflict")
                if isinstance(conflict, Mapping):
                    bucket.conflicts[str(conflict.get("kind", "")).upper()] += 1
            times = TryTimes.of(one_try)
            bucket.wasted_s += times.wasted_s
            bucket.waited_s += times.waited_s
    return {table: [days[d] for d in sorted(days)] for table, days in sorted(tables.items())}


@dataclass(frozen=True)
class TryRow:
    """One try of a task instance, as the views list it."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int
    try_number: int
    status: str
    decision: str | None
    reason: str | None
    attempts: tuple[dict[str, Any], ...]
    max_attempts: int | None
    wasted_s: float
    waited_s: float = 0.0


def try_rows(task: TaskReport, reasons: Mapping[int, str] | None = None) -> list[TryRow]:
    """Every try of ``task``; ``reasons`` (Airflow's ``retry_reason`` per try) fill in a missing reason."""
    rows = []
    for one_try in task.tries:
        number = int(one_try.get("try_number") or 1)
        attempts = tuple(a for a in one_try.get("attempts") or [] if isinstance(a, Mapping))
        times = TryTimes.of(one_try)
        rows.append(
            TryRow(
                dag_id=task.dag_id,
                run_id=task.run_id,
                task_id=task.task_id,
                map_index=task.map_index,
                try_number=number,
                status=str(one_try.get("status") or ""),
                decision=one_try.get("decision"),
                reason=one_try.get("reason") or (reasons or {}).get(number),
                attempts=tuple(dict(a) for a in attempts),
                max_attempts=one_try.get("max_attempts"),
                wasted_s=times.wasted_s,
                waited_s=times.waited_s,
            )
        )
    return rows


def read_task_instance(
    session: Session, dag_id: str, run_id: str, task_id: str, map_index: int
) -> tuple[TaskReport | None, dict[int, str], dict[int, str]]:
    """One task instance: its report (XCom, else its tries in the task state store), and per try
    Airflow's ``retry_reason`` and state from ``task_instance_history`` and ``task_instance``."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskinstancehistory import TaskInstanceHistory
    from airflow.models.xcom import XComModel

    ids = {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "map_index": map_index}
    row = session.query(XComModel).filter_by(key=REPORT_XCOM_KEY, **ids).one_or_none()
    value = xcom_value(row) if row is not None else None
    report = (
        TaskReport(dag_id, run_id, task_id, map_index, dict(value)) if isinstance(value, Mapping) else None
    )
    if report is None:
        tries = _state_store_tries(session, ids)
        if tries:
            report = TaskReport(dag_id, run_id, task_id, map_index, {**tries[-1], "tries": tries})
    reasons: dict[int, str] = {}
    states: dict[int, str] = {}
    for past in session.query(TaskInstanceHistory).filter_by(**ids):
        states[int(past.try_number)] = str(past.state)
        if past.retry_reason:
            reasons[int(past.try_number)] = str(past.retry_reason)
    current = session.query(TaskInstance).filter_by(**ids).one_or_none()
    if current is not None and current.try_number:
        states[int(current.try_number)] = str(current.state)
    return report, reasons, states


def _state_store_tries(session: Session, ids: Mapping[str, Any]) -> list[dict[str, Any]]:
    try:
        from airflow.models.task_state_store import TaskStateStoreModel
    except ImportError:  # an Airflow without the task state store
        return []
    row = session.query(TaskStateStoreModel).filter_by(key=TRIES_KEY, **ids).one_or_none()
    if row is None:
        return []
    try:
        value = json.loads(row.value)
    except (TypeError, ValueError):
        return []
    return [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []
