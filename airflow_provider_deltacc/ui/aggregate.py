"""The Delta conflicts page's numbers, added up by the metadata DB.

One statement flattens the ``deltacc_report`` XComs of the chosen DAGs and time range into tries and
attempts (:mod:`.json_sql`) and groups them per table and day and per table and task; a second pages the
tries with a retry decision; a third counts the conflicts per losing task and winning version, whose winners
a fourth finds among the committed reports. Python decodes only those grouped rows and the one page of tries,
so the page's work is bounded by the groups and the page, not by how many reports the range holds.

On a database without JSON functions the view reads (:func:`summary_from_reports`) the newest
:data:`~.data.REPORT_LIMIT` reports in Python instead, with the same filters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.table_identity import table_key
from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY
from airflow_provider_deltacc.ui.data import (
    REPORT_LIMIT,
    Bucket,
    TaskReport,
    TryRow,
    read_reports,
    seconds_of,
    try_rows,
)
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.json_sql import JsonDialect, json_dialect

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

#: The most conflict groups (loser, winner version, kind) the pairs are counted from.
PAIR_GROUP_LIMIT = 5000


@dataclass
class TaskWaits:
    """One task's tries on one table in the range: what it committed, lost, and waited for its turn."""

    dag_id: str
    task_id: str
    tries: int = 0
    commits: int = 0
    conflicts: int = 0
    wasted_s: float = 0.0
    admission_wait_s: float = 0.0
    queue_wait_s: float = 0.0

    @property
    def waited_s(self) -> float:
        return self.admission_wait_s + self.queue_wait_s


@dataclass
class ViewSummary:
    """What the conflicts page shows for one request.

    :param tables: per table key, its days (oldest first).
    :param tasks: per table key, its tasks, most waiting and wasted first.
    :param decisions: the requested page of tries with a retry decision, newest first.
    :param decision_count: how many such tries the range holds (for paging).
    :param reports: reports (compact: only what the pairs read) for :func:`~.pairs.conflict_pairs`.
    :param table_names: every table key in the range (for the table filter).
    :param bounded: when the numbers come from the newest reports only, how many.
    """

    tables: dict[str, list[Bucket]] = field(default_factory=dict)
    tasks: dict[str, list[TaskWaits]] = field(default_factory=dict)
    decisions: list[TryRow] = field(default_factory=list)
    decision_count: int = 0
    reports: list[dict[str, Any]] = field(default_factory=list)
    table_names: list[str] = field(default_factory=list)
    bounded: int | None = None


def _reports_cte(d: JsonDialect) -> str:
    """The reports of the DAGs and time range asked, then their tries (with the try's day and table key
    input) and their attempts."""
    started = d.number("t.value", "attempts.0.started_at")
    ended = d.number("t.value", "ended_at")
    attempt = "a.value"
    return f"""
WITH reports AS (
  SELECT x.dag_id, x.run_id, x.task_id, x.map_index, x.timestamp AS pushed, x.value AS doc
  FROM xcom x
  WHERE x.key = :key AND x.dag_id IN :dag_ids AND x.timestamp >= :since AND x.timestamp < :until
), tries AS (
  SELECT r.dag_id, r.run_id, r.task_id, r.map_index, r.pushed, {d.position("t")} AS position,
    COALESCE({d.text("r.doc", "table")}, '') AS tbl,
    COALESCE({d.day(f"COALESCE({started}, {ended})")}, 'unknown') AS day,
    {d.text("t.value", "status")} AS status,
    {d.text("t.value", "decision")} AS decision,
    COALESCE({d.number("t.value", "admission_wait_s")}, 0) AS admission_s,
    t.value AS one_try
  FROM reports r, {d.elements.format(array=d.tries.format(doc="r.doc"), alias="t")}
), attempts AS (
  SELECT tr.tbl, tr.day, tr.dag_id, tr.task_id,
    {d.json(attempt, "conflict")} AS conflict,
    {d.text(attempt, "conflict.kind")} AS kind,
    COALESCE({d.number(attempt, "wasted_s")}, 0) AS wasted_s,
    COALESCE({d.number(attempt, "queue_s")}, 0) AS queue_s,
    {d.number(attempt, "conflict.winning_version")} AS winning_version,
    {d.text(attempt, "conflict.winning_operation")} AS winning_operation,
    {d.json("tr.one_try", "pinned_columns")} AS pinned
  FROM tries tr, {d.elements.format(array=d.attempts.format(doc="tr.one_try"), alias="a")}
)"""


def _totals_sql(d: JsonDialect) -> str:
    """Per table and day, and per table and task: tries, commits, retries, decisions, conflicts, wasted and
    waited seconds (``grain`` says which)."""
    committed = "CASE WHEN status IN ('committed', 'skipped_duplicate') THEN 1 ELSE 0 END"
    retried = "CASE WHEN decision = 'retry' THEN 1 ELSE 0 END"
    decided = "CASE WHEN decision IS NOT NULL THEN 1 ELSE 0 END"
    lost = "CASE WHEN conflict IS NOT NULL THEN 1 ELSE 0 END"
    return (
        _reports_cte(d)
        + f"""
SELECT 'day' AS grain, tbl, day AS at, NULL AS dag_id, NULL AS task_id, NULL AS kind, COUNT(*) AS tries,
  SUM({committed}) AS commits, SUM({retried}) AS retries, SUM({decided}) AS decided, 0 AS conflicts,
  0.0 AS wasted_s, SUM(admission_s) AS admission_s, 0.0 AS queue_s
FROM tries GROUP BY tbl, day
UNION ALL
SELECT 'day_attempts', tbl, day, NULL, NULL, UPPER(kind), 0, 0, 0, 0, SUM({lost}), SUM(wasted_s), 0.0,
  SUM(queue_s)
FROM attempts GROUP BY tbl, day, UPPER(kind)
UNION ALL
SELECT 'task', tbl, NULL, dag_id, task_id, NULL, COUNT(*), SUM({committed}), SUM({retried}), SUM({decided}),
  0, 0.0, SUM(admission_s), 0.0
FROM tries GROUP BY tbl, dag_id, task_id
UNION ALL
SELECT 'task_attempts', tbl, NULL, dag_id, task_id, NULL, 0, 0, 0, 0, SUM({lost}), SUM(wasted_s), 0.0,
  SUM(queue_s)
FROM attempts GROUP BY tbl, dag_id, task_id
"""
    )


def _decisions_sql(d: JsonDialect, *, by_table: bool) -> str:
    where = "decision IS NOT NULL" + (" AND tbl IN :tables" if by_table else "")
    return (
        _reports_cte(d)
        + f"""
SELECT dag_id, run_id, task_id, map_index, tbl, one_try FROM tries WHERE {where}
ORDER BY pushed DESC, dag_id, run_id, task_id, map_index, position DESC
LIMIT :limit OFFSET :offset
"""
    )


def _losers_sql(d: JsonDialect) -> str:
    return (
        _reports_cte(d)
        + """
SELECT tbl, dag_id, task_id, UPPER(kind) AS kind, winning_version, winning_operation, COUNT(*) AS conflicts,
  MAX(conflict) AS conflict, MAX(pinned) AS pinned
FROM attempts WHERE conflict IS NOT NULL
GROUP BY tbl, dag_id, task_id, UPPER(kind), winning_version, winning_operation
ORDER BY COUNT(*) DESC LIMIT :limit
"""
    )


def _winners_sql(d: JsonDialect) -> str:
    version = d.number("x.value", "table_version")
    return f"""
SELECT x.dag_id, x.task_id, COALESCE({d.text("x.value", "table")}, '') AS tbl, {version} AS version
FROM xcom x
WHERE x.key = :key AND x.dag_id IN :dag_ids AND {d.text("x.value", "status")} IN ('committed',
  'skipped_duplicate') AND {version} IN :versions
"""


def _statement(sql: str) -> Any:
    """``sql`` with its list parameters (``IN :name``) expanded and its time range (``:since``, ``:until``)
    typed as Airflow's timestamps are."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import bindparam, text

    params: list[Any] = [bindparam(name, expanding=True) for name in re.findall(r"\bIN :(\w+)", sql)]
    timestamp = XComModel.__table__.c.timestamp.type
    params += [bindparam(name, type_=timestamp) for name in ("since", "until") if f":{name}" in sql]
    return text(sql).bindparams(*params)


def _scope(filters: ViewFilters, dag_ids: Iterable[str]) -> list[str]:
    allowed = sorted(dag_ids)
    return [d for d in allowed if d == filters.dag_id] if filters.dag_id else allowed


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def summarise(session: Session, filters: ViewFilters, dag_ids: Iterable[str]) -> ViewSummary:
    """What the conflicts page shows for ``filters`` over the DAGs ``dag_ids`` (those the user may read).

    :param session: a metadata DB session.
    :param filters: the request.
    :param dag_ids: the DAGs the user may read.
    """
    scope = _scope(filters, dag_ids)
    dialect = json_dialect(session.get_bind().dialect.name)
    if dialect is None:
        return summary_from_reports(
            read_reports(session, dag_ids=scope, since=filters.since, until=filters.until), filters
        )
    if not scope:
        return ViewSummary()
    window = {"key": REPORT_XCOM_KEY, "dag_ids": scope, "since": filters.since, "until": filters.until}
    summary = ViewSummary()
    rows = session.execute(_statement(_totals_sql(dialect)), window).all()
    spellings = _add_totals(summary, rows, filters.table)
    chosen = sorted(spellings) if filters.table else None
    offset = (filters.page - 1) * filters.per_page
    page_params = {**window, "limit": filters.per_page, "offset": offset}
    if chosen is not None:
        page_params["tables"] = chosen
    if chosen != []:
        sql = _decisions_sql(dialect, by_table=chosen is not None)
        for row in session.execute(_statement(sql), page_params):
            one_try = _loads(row.one_try)
            if isinstance(one_try, dict):
                task = TaskReport(row.dag_id, row.run_id, row.task_id, row.map_index, {"tries": [one_try]})
                summary.decisions += try_rows(task)
        summary.reports = _pair_reports(session, dialect, window, scope, spellings if chosen else None)
    return summary


def _add_totals(summary: ViewSummary, rows: Sequence[Any], table: str | None) -> set[str]:
    """Fill ``summary`` from the grouped rows; returns the spellings of the chosen table (every spelling
    when none is chosen)."""
    wanted = table_key(table) if table else None
    days: dict[str, dict[str, Bucket]] = {}
    tasks: dict[str, dict[tuple[str, str], TaskWaits]] = {}
    names: set[str] = set()
    spellings: set[str] = set()
    for row in rows:
        key = table_key(row.tbl) if row.tbl.strip() else ""
        names.add(key)
        if wanted is not None and key != wanted:
            continue
        spellings.add(row.tbl)
        if row.grain.startswith("day"):
            bucket = days.setdefault(key, {}).setdefault(row.at, Bucket(row.at))
            bucket.commits += int(row.commits or 0)
            bucket.retries += int(row.retries or 0)
            bucket.waited_s += float(row.admission_s or 0) + float(row.queue_s or 0)
            bucket.wasted_s += float(row.wasted_s or 0)
            if row.kind and row.conflicts:
                bucket.conflicts[row.kind] += int(row.conflicts)
            summary.decision_count += int(row.decided or 0)
        else:
            waits = tasks.setdefault(key, {}).setdefault(
                (row.dag_id, row.task_id), TaskWaits(row.dag_id, row.task_id)
            )
            waits.tries += int(row.tries or 0)
            waits.commits += int(row.commits or 0)
            waits.conflicts += int(row.conflicts or 0)
            waits.wasted_s += float(row.wasted_s or 0)
            waits.admission_wait_s += float(row.admission_s or 0)
            waits.queue_wait_s += float(row.queue_s or 0)
    summary.table_names = sorted(names)
    summary.tables = {k: [v[day] for day in sorted(v)] for k, v in sorted(days.items())}
    summary.tasks = {
        k: sorted(v.values(), key=lambda w: (-(w.waited_s + w.wasted_s), w.dag_id, w.task_id))
        for k, v in sorted(tasks.items())
    }
    return spellings


def _pair_reports(
    session: Session,
    d: JsonDialect,
    window: Mapping[str, Any],
    scope: list[str],
    spellings: set[str] | None,
) -> list[dict[str, Any]]:
    """Compact reports for the pairs: one per losing task and winning version with that many conflicts, and
    one per committed report that won one of them (the winner may have been pushed before the range)."""
    losers = session.execute(_statement(_losers_sql(d)), {**window, "limit": PAIR_GROUP_LIMIT}).all()
    reports: list[dict[str, Any]] = []
    versions: set[int] = set()
    for row in losers:
        if spellings is not None and row.tbl not in spellings:
            continue
        conflict = _loads(row.conflict)
        if not isinstance(conflict, dict):
            continue
        pinned = _loads(row.pinned)
        one_try = {"attempts": [{"conflict": conflict}] * int(row.conflicts), "pinned_columns": pinned or []}
        reports.append({"dag_id": row.dag_id, "task_id": row.task_id, "table": row.tbl, "tries": [one_try]})
        if row.winning_version is not None:
            versions.add(int(row.winning_version))
    if versions:
        params = {"key": REPORT_XCOM_KEY, "dag_ids": scope, "versions": sorted(versions)}
        sql = _statement(_winners_sql(d))
        for row in session.execute(sql, params):
            reports.append(
                {
                    "dag_id": row.dag_id,
                    "task_id": row.task_id,
                    "table": row.tbl,
                    "table_version": int(row.version),
                    "status": "committed",
                }
            )
    return reports


def summary_from_reports(reports: Sequence[TaskReport], filters: ViewFilters) -> ViewSummary:
    """The same summary from reports read in Python (a database without JSON functions)."""
    from airflow_provider_deltacc.ui.data import buckets_by_table

    wanted = table_key(filters.table) if filters.table else None
    chosen = [r for r in reports if wanted is None or r.table == wanted]
    summary = ViewSummary(
        tables=buckets_by_table(chosen),
        table_names=sorted({r.table for r in reports}),
        reports=[r.with_ids() for r in chosen],
        bounded=REPORT_LIMIT if len(reports) >= REPORT_LIMIT else None,
    )
    tasks: dict[str, dict[tuple[str, str], TaskWaits]] = {}
    decided: list[TryRow] = []
    for report in chosen:
        waits = tasks.setdefault(report.table, {}).setdefault(
            (report.dag_id, report.task_id), TaskWaits(report.dag_id, report.task_id)
        )
        for one_try in report.tries:
            attempts = [a for a in one_try.get("attempts") or [] if isinstance(a, Mapping)]
            waits.tries += 1
            waits.commits += one_try.get("status") in ("committed", "skipped_duplicate")
            waits.conflicts += sum(isinstance(a.get("conflict"), Mapping) for a in attempts)
            waits.wasted_s += sum(seconds_of(a.get("wasted_s")) for a in attempts)
            waits.admission_wait_s += seconds_of(one_try.get("admission_wait_s"))
            waits.queue_wait_s += sum(seconds_of(a.get("queue_s")) for a in attempts)
        decided += [row for row in reversed(try_rows(report)) if row.decision]
    summary.tasks = {
        k: sorted(v.values(), key=lambda w: (-(w.waited_s + w.wasted_s), w.dag_id, w.task_id))
        for k, v in sorted(tasks.items())
    }
    summary.decision_count = len(decided)
    start = (filters.page - 1) * filters.per_page
    summary.decisions = decided[start : start + filters.per_page]
    return summary
