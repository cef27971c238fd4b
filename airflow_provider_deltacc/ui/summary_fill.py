"""Sum the commit reports the summary table lacks into it, inside the metadata DB, before the page reads it.

The conflicts page calls :func:`fill_summary` for the DAGs and time range it shows: the reports of the range
that have no rows (new ones, a re-run's report that replaced its task instance's last one, reports pushed
before the provider's table existed) are found by their task instance and push time, the rows of a replaced
report are deleted, and one ``INSERT ... SELECT`` flattens the found reports (:mod:`.json_sql`) and sums them
per try and kind of conflict. A report is summed once; after that the page reads its rows, not its JSON.

Two api-servers filling at once on PostgreSQL take turns (a transaction-scoped advisory lock) so no report
is summed twice; SQLite has one writer at a time anyway.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY
from airflow_provider_deltacc.ui.bound_sql import bound
from airflow_provider_deltacc.ui.json_sql import JsonDialect
from airflow_provider_deltacc.ui.summary_table import SUMMARY_TABLE

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

#: The reports of a range, on the ``xcom`` row ``x``. The key is a literal, not a parameter, so the
#: database can prove that :data:`~.summary_db.REPORT_INDEX` (partial, on the reports only) holds the rows.
IN_RANGE = (
    f"x.key = '{REPORT_XCOM_KEY}' AND x.dag_id IN :dag_ids AND x.timestamp >= :since AND x.timestamp < :until"
)


def _summarised(row: str, pushed: str) -> str:
    """The report on ``row`` (pushed at ``pushed``) has rows in the summary table: the same task instance
    and push time (in the range, so the database reads only the range's rows)."""
    return f"""EXISTS (SELECT 1 FROM {SUMMARY_TABLE} s WHERE s.dag_id = {row}.dag_id
  AND s.run_id = {row}.run_id AND s.task_id = {row}.task_id AND s.map_index = {row}.map_index
  AND s.pushed = {pushed} AND s.pushed >= :since AND s.pushed < :until)"""


#: The key of PostgreSQL's advisory lock the fillers take turns on ('dcc_summ' as 8 bytes).
_FILL_LOCK = int.from_bytes(b"dcc_summ", "big") - 2**63
_DELETE_BATCH = 500
#: The reports one fill sums from which PostgreSQL's statistics of the table are gathered again.
ANALYZE_AFTER = 1000
_TASK = ("dag_id", "run_id", "task_id", "map_index")
_KEYS = "dag_id, run_id, task_id, map_index, pushed"
_GROUP = f"{_KEYS}, tbl, try_pos, day, lost, kind, winning_version, winning_operation"


def _missing_sql() -> str:
    """Those of the newest ``:cap`` reports of the range that have no rows (the page reads no older ones).
    Only the report index is read: the task instance and the push time, not the report."""
    return f"""SELECT dag_id, run_id, task_id, map_index, pushed FROM (
  SELECT x.dag_id, x.run_id, x.task_id, x.map_index, x.timestamp AS pushed FROM xcom x WHERE {IN_RANGE}
  ORDER BY x.timestamp DESC LIMIT :cap
) AS newest
WHERE NOT {_summarised("newest", "newest.pushed")}"""


def _insert_sql(d: JsonDialect) -> str:
    """Sum every attempt of the range's reports without rows pushed from ``:fill_since`` on, per try,
    ``lost``, kind and winning commit; the try's own values (``is_try`` ...) sit on its first attempt's
    row."""
    first = "COALESCE(att_pos, 1) = 1"
    columns = (
        f"{_KEYS}, first_row, tbl, try_pos, day, is_try, committed, retried, decided, lost, kind, "
        "winning_version, winning_operation, conflict, pinned, wasted_s, first_turn_s, turn_wait_s, "
        "won_version"
    )
    return f"""INSERT INTO {SUMMARY_TABLE} ({columns})
SELECT {_KEYS},
  CASE WHEN ROW_NUMBER() OVER (PARTITION BY {_KEYS} ORDER BY try_pos, lost, kind, winning_version) = 1
    THEN 1 ELSE 0 END,
  tbl, try_pos, day, SUM(is_try), SUM(committed), SUM(retried), SUM(decided), SUM(lost), kind,
  winning_version, winning_operation, MAX(conflict), MAX(pinned), SUM(wasted_s), SUM(first_turn_s),
  SUM(turn_wait_s), MAX(won_version)
FROM (
  SELECT {_KEYS}, tbl, try_pos, day, lost, kind, winning_version, winning_operation, conflict, pinned,
    wasted_s, turn_wait_s,
    CASE WHEN {first} THEN 1 ELSE 0 END AS is_try,
    CASE WHEN {first} AND status IN ('committed', 'skipped_duplicate') THEN 1 ELSE 0 END AS committed,
    CASE WHEN {first} AND decision = 'retry' THEN 1 ELSE 0 END AS retried,
    CASE WHEN {first} AND decision IS NOT NULL THEN 1 ELSE 0 END AS decided,
    CASE WHEN {first} THEN first_turn_s ELSE 0 END AS first_turn_s,
    CASE WHEN {first} AND try_pos = 1 THEN won_version END AS won_version
  FROM (
{d.flat()}
WHERE {IN_RANGE} AND x.timestamp >= :fill_since AND NOT {_summarised("x", "x.timestamp")}
  ) AS attempts
) AS flat
GROUP BY {_GROUP}"""


def fill_summary(session: Session, dialect: JsonDialect, window: Mapping[str, Any], *, cap: int) -> int:
    """Give those of the newest ``cap`` reports of ``window`` (``dag_ids``, ``since``, ``until``) that lack
    rows their rows; returns how many reports were summed.

    :param session: a metadata DB session (the page's: the rows are committed with it).
    :param dialect: the database's JSON SQL.
    :param window: the page's reports.
    :param cap: the most reports summed (the page reads no more than that many).
    """
    from sqlalchemy import text

    missing = _missing(session, window, cap)
    if not missing:
        return 0
    if dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:lock)"), {"lock": _FILL_LOCK})
        missing = _missing(session, window, cap)  # what another filler summed meanwhile is not summed again
        if not missing:
            return 0
    _delete_rows_of(session, {tuple(getattr(row, c) for c in _TASK) for row in missing})
    oldest = min(row.pushed for row in missing)  # an aware UTC time: bound(pushed_out=True) types it
    session.execute(bound(_insert_sql(dialect)), {**window, "fill_since": oldest})
    if dialect.name == "postgresql" and len(missing) >= ANALYZE_AFTER:
        # Planner statistics for the rows just added (autovacuum gathers them only later): without them
        # PostgreSQL takes the new table for empty and joins the page's winners to its losers in a nested
        # loop, 0.9 s for 3,000 reports instead of a few ms.
        session.execute(text(f"ANALYZE {SUMMARY_TABLE}"))
    return len(missing)


def _missing(session: Session, window: Mapping[str, Any], cap: int) -> Sequence[Any]:
    return session.execute(bound(_missing_sql(), pushed_out=True), {**window, "cap": cap}).all()


def _delete_rows_of(session: Session, tasks: set[tuple[Any, ...]]) -> None:
    """Delete the rows of these task instances: a report found without rows replaced any they had."""
    from sqlalchemy import column, delete, table, tuple_

    summary = table(SUMMARY_TABLE, *(column(c) for c in _TASK))
    key = tuple_(*(summary.c[c] for c in _TASK))
    ordered = sorted(tasks)
    for start in range(0, len(ordered), _DELETE_BATCH):
        session.execute(delete(summary).where(key.in_(ordered[start : start + _DELETE_BATCH])))


@contextmanager
def summary_table_required(session: Session) -> Iterator[None]:
    """Raise :class:`~airflow_provider_deltacc.exceptions.DeltaCCSummaryTableMissing` for a statement that
    failed because the table does not exist."""
    from sqlalchemy import inspect
    from sqlalchemy.exc import DBAPIError

    from airflow_provider_deltacc.exceptions import DeltaCCSummaryTableMissing

    try:
        yield
    except DBAPIError:
        session.rollback()
        if not inspect(session.get_bind()).has_table(SUMMARY_TABLE):
            raise DeltaCCSummaryTableMissing() from None
        raise
