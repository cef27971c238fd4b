"""The conflicts page's equality test, shared by its SQLite half (``tests/unit/ui/test_aggregate.py``) and its
PostgreSQL half (``tests/integration/ui/test_aggregate_postgres.py``): the task instances both databases hold,
the requests, what of a summary is compared, and which path :func:`~airflow_provider_deltacc.ui.aggregate.
summarise` took (:class:`PathTaken`: the statements it ran, and whether it read the reports in Python).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.retries.tries import TryDecision
from airflow_provider_deltacc.ui import aggregate, summary_fill
from airflow_provider_deltacc.ui.aggregate import ViewSummary, summarise, summary_from_reports
from airflow_provider_deltacc.ui.bound_sql import bound
from airflow_provider_deltacc.ui.data import read_reports
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.pairs import conflict_pairs
from airflow_provider_deltacc.ui.summary_table import SUMMARY_TABLE
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed
from tests.support.ui_metadata import PastTry, TaskRow, add_task_instances, clear_task_instances

if TYPE_CHECKING:
    import pytest
    from sqlalchemy.orm import Session

    from airflow_provider_deltacc.ui.json_sql import JsonDialect

DAGS = ("ui_agg_a", "ui_agg_b")
START = datetime(2026, 11, 10, 8, tzinfo=UTC)
ALL_TIME = {"since": "2026-11-01", "until": "2026-11-30"}

QUERIES = [
    ALL_TIME,
    {**ALL_TIME, "table": "delta.`/lake/orders`"},
    {**ALL_TIME, "dag_id": DAGS[1], "table": "/lake/payments"},
    {"since": "2026-11-12", "until": "2026-11-14T12:00"},
    {**ALL_TIME, "page": "2", "per_page": "10"},
    {**ALL_TIME, "page": "3", "per_page": "10", "table": "/lake/orders"},
    {**ALL_TIME, "table": "/lake/nowhere"},
]


def query_id(query: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in query.items())


def _waiting(table: str, started: float, version: int) -> dict[str, Any]:
    """A committed try that waited 4 s for its first turn and, after a lost conflict, 2.5 s for its next."""
    lost = lost_try(table, started_at=started, winning_version=version - 1, kind=ConflictKind.DELETE_READ)
    report = final_report((committed_try(table, started_at=started, version=version), None))
    report["tries"][0]["first_turn_wait_s"] = 4.0
    lost_attempt = {**lost["attempts"][0], "turn_wait_s": 2.5, "number": 1}
    report["tries"][0]["attempts"] = [lost_attempt, {**report["tries"][0]["attempts"][0], "number": 2}]
    return report


def rows() -> list[TaskRow]:
    """36 runs over three table spellings and a second table, each a winner and a MERGE that retried,
    waited or failed, and one report of the wrong types."""
    found: list[TaskRow] = []
    spellings = ("/lake/orders", "/lake/orders/", "file:/lake/orders")
    for n in range(36):
        dag = DAGS[n % 2]
        ended = START + timedelta(hours=9 * n)
        table = spellings[n % 3] if n % 4 else "/lake/payments"
        started = ended.timestamp() - 120
        run = f"run_{n}"
        # the winner of the next task's conflict: a committed report of version n * 10 + 4
        found.append(
            TaskRow(
                dag,
                run,
                "winner",
                final_report((committed_try(table, started_at=started, version=n * 10 + 4), None)),
                ended=ended,
            )
        )
        if n % 3 == 0:
            report, reason = retried_then_committed(table, started_at=started, version=n * 10 + 5)
            past = (PastTry(1, retry_reason=reason),)
            found.append(TaskRow(dag, run, "merge", report, try_number=2, past=past, ended=ended))
        elif n % 3 == 1:
            found.append(TaskRow(dag, run, "merge", _waiting(table, started, n * 10 + 5), ended=ended))
        else:
            lost = lost_try(table, started_at=started, winning_version=n * 10 + 4, winning_operation=None)
            failed = final_report((lost, TryDecision("fail", "a DELETE_READ conflict cannot be retried")))
            found.append(TaskRow(dag, run, "merge", failed, state="failed", ended=ended, map_index=n % 2))
    odd = {"table": "/lake/odd", "status": "committed", "attempts": [{"wasted_s": "lots", "started_at": "x"}]}
    found.append(TaskRow(DAGS[0], "run_odd", "odd", odd, ended=START + timedelta(days=2)))
    return found


def comparable(summary: ViewSummary) -> dict[str, Any]:
    """What the page shows of ``summary``, as plain values."""
    return {
        "tables": {t: [asdict(b) for b in days] for t, days in summary.tables.items()},
        "tasks": {t: [asdict(w) for w in waits] for t, waits in summary.tasks.items()},
        "decision_count": summary.decision_count,
        "decisions": [(r.dag_id, r.run_id, r.task_id, r.map_index, r.try_number) for r in summary.decisions],
        "table_names": summary.table_names,
        "pairs": [asdict(p) for p in conflict_pairs(summary.reports)],
    }


def in_python(session: Session, filters: ViewFilters) -> dict[str, Any]:
    """The page read from every report of the request in Python (what a database without JSON functions
    gets)."""
    chosen = [filters.dag_id] if filters.dag_id else list(DAGS)
    reports = read_reports(session, dag_ids=chosen, since=filters.since, until=filters.until)
    return comparable(summary_from_reports(reports, filters))


#: The placeholders an expanded ``IN`` list holds, in any of the DB-API's parameter styles.
_PLACEHOLDER = r"(?:\?|%\(\w+\)s|:\w+|\$\d+)"
_PLACEHOLDERS = rf"{_PLACEHOLDER}(?:, {_PLACEHOLDER})*"


@dataclass
class PathTaken:
    """What one :func:`~airflow_provider_deltacc.ui.aggregate.summarise` did: the SQL statements run on the
    session's engine, and how often it read the reports in Python (its ``read_reports``)."""

    statements: list[str] = field(default_factory=list)
    python_reads: int = 0

    def ran(self, sql: str, session: Session) -> bool:
        """Whether a statement run was ``sql`` as :mod:`~airflow_provider_deltacc.ui.aggregate` builds it:
        its text compiled for the session's database, every piece of it in order, the lists its ``IN``
        parameters expand to (as many placeholders as values) in between."""
        compiled = str(bound(sql).compile(dialect=session.get_bind().dialect))
        pieces = re.split(r"__\[POSTCOMPILE_\w+\]", compiled)
        pattern = re.compile(_PLACEHOLDERS.join(re.escape(p) for p in pieces))
        return any(pattern.fullmatch(statement) for statement in self.statements)

    def added_up_in_sql(self, session: Session) -> bool:
        """Whether the page's numbers came from the database: its cutoff and totals statements ran on the
        summary table, and no report was read in Python."""
        return (
            self.python_reads == 0
            and self.ran(aggregate._cutoff_sql(), session)
            and self.ran(aggregate._totals_sql(), session)
        )

    def summed(self, session: Session, dialect: JsonDialect) -> bool:
        """Whether reports were summed into the summary table, by ``dialect``'s JSON SQL."""
        return self.ran(summary_fill._insert_sql(dialect), session)


@contextlib.contextmanager
def path_taken(session: Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[PathTaken]:
    """Record, for the block, the statements run on ``session``'s engine and the calls of the Python
    fallback's ``read_reports`` by :mod:`~airflow_provider_deltacc.ui.aggregate`."""
    from sqlalchemy import event

    taken = PathTaken()
    engine = session.get_bind()

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        taken.statements.append(statement)

    def counted(*args: Any, **kwargs: Any) -> Any:
        taken.python_reads += 1
        return read_reports(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(aggregate, "read_reports", counted)
        event.listen(engine, "before_cursor_execute", record)
        try:
            yield taken
        finally:
            event.remove(engine, "before_cursor_execute", record)


def in_sql(
    session: Session, query: dict[str, str], dialect: JsonDialect, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The page for ``query`` from :func:`~airflow_provider_deltacc.ui.aggregate.summarise`, checked to have
    been added up by the database from the summary table, which ``dialect``'s JSON SQL filled: the first
    request after :func:`fresh_summary` sums the reports, the next ones find nothing to sum."""
    filters = ViewFilters.from_query(query)
    with path_taken(session, monkeypatch) as taken:
        summary = summarise(session, filters, DAGS)
    assert taken.added_up_in_sql(session), (
        f"summarise did not add up {query} in SQL: {taken.python_reads} Python reads, "
        f"statements {[s[:80] for s in taken.statements]}"
    )
    assert summed_rows(session) > 0, f"{dialect.name}'s JSON SQL summed no report into the summary table"
    return comparable(summary)


def summed_rows(session: Session) -> int:
    """The summary table's rows of the DAGs :data:`DAGS`."""

    statement = bound(f"SELECT COUNT(*) FROM {SUMMARY_TABLE} WHERE dag_id IN :dag_ids")
    return int(session.execute(statement, {"dag_ids": list(DAGS)}).scalar() or 0)


def fresh_summary(session: Session) -> None:
    """Delete the summary rows of :data:`DAGS` (the reports stay: the next page sums them again)."""
    session.execute(bound(f"DELETE FROM {SUMMARY_TABLE} WHERE dag_id IN :dag_ids"), {"dag_ids": list(DAGS)})


@contextlib.contextmanager
def filled_sqlite() -> Iterator[None]:
    """The task instances of :func:`rows` in the test session's SQLite metadata DB, for the block."""
    from airflow.utils.session import create_session

    with create_session() as session:
        add_task_instances(session, rows())
    yield
    with create_session() as session:
        clear_task_instances(session, DAGS)
