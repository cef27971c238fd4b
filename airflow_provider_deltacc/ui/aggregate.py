"""The Delta conflicts page's numbers, added up by the metadata DB from the provider's summary table.

The reports of the chosen DAGs and time range that the summary table (:mod:`.summary_table`) lacks are
summed into it first (:mod:`.summary_fill`); then one statement groups the range's summary rows per table
and day, per table and task, per losing task and winning commit, and finds the winners among the committed
reports; a second pages the tries with a retry decision, whose tries alone are read from their reports.
Python decodes only those grouped rows and the one page of tries, and the database reads rows of a few
numbers instead of expanding every report's JSON.

On a database without JSON functions the view reads (:func:`summary_from_reports`) the newest
:data:`~.data.REPORT_LIMIT` reports in Python instead, with the same filters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.contract.try_times import TryTimes
from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY
from airflow_provider_deltacc.ui.bound_sql import bound
from airflow_provider_deltacc.ui.data import (
    REPORT_LIMIT,
    Bucket,
    TaskReport,
    TryRow,
    read_reports,
    try_rows,
    xcom_value,
)
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.json_sql import JsonDialect, json_dialect
from airflow_provider_deltacc.ui.summary_fill import fill_summary, summary_table_required
from airflow_provider_deltacc.ui.summary_table import SUMMARY_TABLE

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

#: The most conflict groups (loser, winner version, kind) the pairs are counted from.
PAIR_GROUP_LIMIT = 5000
#: The most reports of a range the page adds up, newest first: what bounds its time on a busy metadata DB
#: (see bench/ui.py); the page says when it read only these.
REPORT_CAP = 25_000


@dataclass
class TaskWaits:
    """One task's tries on one table in the range: what it committed, lost, and waited for its turn."""

    dag_id: str
    task_id: str
    tries: int = 0
    commits: int = 0
    conflicts: int = 0
    times: TryTimes = field(default_factory=TryTimes)

    @property
    def lost_s(self) -> float:
        """Its tries' wasted work and waits for turns: what the page orders tasks by."""
        return self.times.wasted_s + self.times.waited_s


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


_SUMS = (
    "SUM(is_try) AS tries, SUM(committed) AS commits, SUM(retried) AS retries, SUM(decided) AS decided, "
    "SUM(lost) AS conflicts, SUM(wasted_s) AS wasted_s, SUM(first_turn_s) AS first_turn_s, "
    "SUM(turn_wait_s) AS turn_wait_s"
)
#: The summary rows of the page's reports, on ``deltacc_report_summary``.
_IN_RANGE = "dag_id IN :dag_ids AND pushed >= :since AND pushed < :until"


def _totals_sql() -> str:
    """Per table, day and conflict kind, and per table and task: tries, commits, retries, decisions,
    conflicts, wasted and waited seconds; and the conflicts per losing task and winning commit (``grain``
    says which a row is); from the summary rows of the range."""
    return f"""
WITH flat AS (SELECT * FROM {SUMMARY_TABLE} WHERE {_IN_RANGE})
SELECT 'day' AS grain, tbl, day, NULL AS dag_id, NULL AS task_id, kind, CAST(NULL AS REAL) AS winning_version,
  NULL AS winning_operation, NULL AS conflict, NULL AS pinned, {_SUMS}
FROM flat GROUP BY tbl, day, kind
UNION ALL
SELECT 'task', tbl, NULL, dag_id, task_id, NULL, NULL, NULL, NULL, NULL, {_SUMS}
FROM flat GROUP BY tbl, dag_id, task_id
UNION ALL
SELECT 'lost', tbl, NULL, dag_id, task_id, kind, winning_version, winning_operation, NULL, NULL, {_SUMS}
FROM flat WHERE lost > 0 GROUP BY tbl, dag_id, task_id, kind, winning_version, winning_operation
UNION ALL
SELECT 'sample', tbl, NULL, dag_id, task_id, kind, NULL, NULL, MAX(conflict), MAX(pinned), {_SUMS}
FROM flat WHERE lost > 0 GROUP BY tbl, dag_id, task_id, kind
UNION ALL
SELECT 'won', tbl, NULL, dag_id, task_id, NULL, won_version, NULL, NULL, NULL, {_SUMS}
FROM flat WHERE won_version IN (SELECT winning_version FROM flat WHERE lost > 0)
GROUP BY tbl, dag_id, task_id, won_version
"""


def _decisions_sql(*, by_table: bool) -> str:
    """One page of the tries in range with a retry decision, newest first."""
    table = " AND tbl IN :tables" if by_table else ""
    return f"""
SELECT dag_id, run_id, task_id, map_index, try_pos FROM {SUMMARY_TABLE}
WHERE {_IN_RANGE} AND decided > 0{table}
ORDER BY pushed DESC, dag_id, run_id, task_id, map_index, try_pos DESC
LIMIT :limit OFFSET :offset
"""


def _cutoff_sql() -> str:
    """The push time of the report just past the newest ``:cap`` in range (none when the range holds
    fewer)."""
    return (
        f"SELECT pushed FROM {SUMMARY_TABLE} WHERE {_IN_RANGE} AND first_row = 1 "
        "ORDER BY pushed DESC LIMIT 1 OFFSET :cap"
    )


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
    """What the conflicts page shows for ``filters`` over the DAGs ``dag_ids`` (those the user may read):
    from the newest :data:`REPORT_CAP` reports of the range at most, summed into the summary table first
    where they are not yet (:func:`~.summary_fill.fill_summary`).

    :param session: a metadata DB session (it writes the summary rows: commit it).
    :param filters: the request.
    :param dag_ids: the DAGs the user may read.
    :raises DeltaCCSummaryTableMissing: the database has no summary table (``airflow db migrate`` not run
        since the provider was installed).
    """
    scope = _scope(filters, dag_ids)
    dialect = json_dialect(session.get_bind().dialect.name)
    if dialect is None:
        reports = read_reports(session, dag_ids=scope, since=filters.since, until=filters.until)
        return summary_from_reports(reports, filters)
    if not scope:
        return ViewSummary()
    _plan_as_planned(session, dialect)
    window = {"dag_ids": scope, "since": filters.since, "until": filters.until}
    with summary_table_required(session):
        # One report past the cap too: the cutoff below finds it, and the page says it read the newest only.
        fill_summary(session, dialect, window, cap=REPORT_CAP + 1)
    summary = ViewSummary()
    cutoff = session.execute(bound(_cutoff_sql(), pushed_out=True), {**window, "cap": REPORT_CAP}).scalar()
    if cutoff is not None:
        window["since"] = max(filters.since, cutoff + timedelta(microseconds=1))
        summary.bounded = REPORT_CAP
    rows = session.execute(bound(_totals_sql()), window).all()
    spellings = _add_totals(summary, [r for r in rows if r.grain in ("day", "task")], filters.table)
    chosen = [r for r in rows if not filters.table or r.tbl in spellings]
    summary.reports = _pair_reports(
        [r for r in chosen if r.grain == "lost"],
        {(r.tbl, r.dag_id, r.task_id, r.kind): r for r in chosen if r.grain == "sample"},
        [r for r in rows if r.grain == "won"],
    )
    if filters.table and not spellings:
        return summary
    page = {**window, "limit": filters.per_page, "offset": (filters.page - 1) * filters.per_page}
    by_table = bool(filters.table)
    if by_table:
        page["tables"] = sorted(spellings)
    decided = session.execute(bound(_decisions_sql(by_table=by_table)), page).all()
    summary.decisions = _decided_tries(session, decided)
    return summary


def _decided_tries(session: Session, decided: Sequence[Any]) -> list[TryRow]:
    """The tries the page of decisions names, read from their reports (one statement, by task instance)."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import tuple_

    if not decided:
        return []
    tasks = {(r.dag_id, r.run_id, r.task_id, r.map_index) for r in decided}
    ti = (XComModel.dag_id, XComModel.run_id, XComModel.task_id, XComModel.map_index)
    query = session.query(*ti, XComModel.value).filter(
        XComModel.key == REPORT_XCOM_KEY, tuple_(*ti).in_(sorted(tasks))
    )
    reports = {
        (row.dag_id, row.run_id, row.task_id, row.map_index): TaskReport(
            row.dag_id, row.run_id, row.task_id, row.map_index, value
        )
        for row in query
        if isinstance(value := xcom_value(row), dict)
    }
    rows: list[TryRow] = []
    for row in decided:
        report = reports.get((row.dag_id, row.run_id, row.task_id, row.map_index))
        tries = report.report.get("tries") if report is not None else None
        listed = tries if isinstance(tries, list) and tries else [report.report] if report else []
        one_try = listed[row.try_pos - 1] if 0 < row.try_pos <= len(listed) else None
        if report is not None and isinstance(one_try, dict):
            task = TaskReport(
                report.dag_id, report.run_id, report.task_id, report.map_index, {"tries": [one_try]}
            )
            rows += try_rows(task)
    return rows


def _plan_as_planned(session: Session, dialect: JsonDialect) -> None:
    """PostgreSQL estimates 100 rows for every JSON array it expands (a try has a handful of attempts), so
    these statements look a thousand times costlier than they are and it compiles them with JIT: 0.7 s of
    compiling for 0.05 s of work on 3,000 reports. JIT is off for this transaction only."""
    from sqlalchemy import text

    if dialect.name == "postgresql":
        session.execute(text("SET LOCAL jit = off"))


def _day(number: Any) -> str:
    if number is None:
        return "unknown"
    try:
        return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=int(number))).strftime("%Y-%m-%d")
    except (OverflowError, ValueError):
        return "unknown"


def _add_totals(summary: ViewSummary, rows: Sequence[Any], table: str | None) -> set[str]:
    """Fill ``summary`` from the grouped rows; returns the spellings of the chosen table (every spelling
    when none is chosen)."""
    wanted = table_key(Table(table)) if table else None
    days: dict[str, dict[str, Bucket]] = {}
    tasks: dict[str, dict[tuple[str, str], TaskWaits]] = {}
    names: set[str] = set()
    spellings: set[str] = set()
    for row in rows:
        key = table_key(Table(row.tbl)) if row.tbl.strip() else ""
        names.add(key)
        if wanted is not None and key != wanted:
            continue
        spellings.add(row.tbl)
        if row.grain == "day":
            day = _day(row.day)
            bucket = days.setdefault(key, {}).setdefault(day, Bucket(day))
            bucket.commits += int(row.commits or 0)
            bucket.retries += int(row.retries or 0)
            bucket.waited_s += float(row.first_turn_s or 0) + float(row.turn_wait_s or 0)
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
            waits.times += TryTimes(
                wasted_s=float(row.wasted_s or 0),
                first_turn_wait_s=float(row.first_turn_s or 0),
                turn_wait_s=float(row.turn_wait_s or 0),
            )
    summary.table_names = sorted(names)
    summary.tables = {k: [v[day] for day in sorted(v)] for k, v in sorted(days.items())}
    summary.tasks = {
        k: sorted(v.values(), key=lambda w: (-w.lost_s, w.dag_id, w.task_id))
        for k, v in sorted(tasks.items())
    }
    return spellings


def _pair_reports(
    losers: Sequence[Any], samples: Mapping[tuple[Any, ...], Any], winners: Sequence[Any]
) -> list[dict[str, Any]]:
    """Compact reports for the pairs: one per losing task and winning commit with that many conflicts (the
    :data:`PAIR_GROUP_LIMIT` largest groups; each conflict is its task's sample of that kind, with the
    group's winner), and one per report of the range that committed a version some conflict names (by
    version alone: the pairs match the table by its key)."""
    reports: list[dict[str, Any]] = []
    decoded: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    for row in sorted(losers, key=lambda r: -int(r.conflicts or 0))[:PAIR_GROUP_LIMIT]:
        key = (row.tbl, row.dag_id, row.task_id, row.kind)
        if key not in decoded and key in samples:
            decoded[key] = (_loads(samples[key].conflict), _loads(samples[key].pinned))
        sample, pinned = decoded.get(key, (None, None))
        if not isinstance(sample, dict):
            continue
        winner = {"winning_version": row.winning_version, "winning_operation": row.winning_operation}
        if row.winning_version is not None:
            winner["winning_version"] = int(row.winning_version)
        conflict = {**sample, **winner}
        one_try = {"attempts": [{"conflict": conflict}] * int(row.conflicts), "pinned_columns": pinned or []}
        reports.append({"dag_id": row.dag_id, "task_id": row.task_id, "table": row.tbl, "tries": [one_try]})
    for row in winners:
        reports.append(
            {
                "dag_id": row.dag_id,
                "task_id": row.task_id,
                "table": row.tbl,
                "table_version": int(row.winning_version),
                "status": "committed",
            }
        )
    return reports


def summary_from_reports(reports: Sequence[TaskReport], filters: ViewFilters) -> ViewSummary:
    """The same summary from reports read in Python (a database without JSON functions)."""
    from airflow_provider_deltacc.ui.data import buckets_by_table

    wanted = table_key(Table(filters.table)) if filters.table else None
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
            waits.times += TryTimes.of(one_try)
        decided += [row for row in reversed(try_rows(report)) if row.decision]
    summary.tasks = {
        k: sorted(v.values(), key=lambda w: (-w.lost_s, w.dag_id, w.task_id))
        for k, v in sorted(tasks.items())
    }
    summary.decision_count = len(decided)
    start = (filters.page - 1) * filters.per_page
    summary.decisions = decided[start : start + filters.per_page]
    return summary
