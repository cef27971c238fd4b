"""The conflicts page's numbers added up by the metadata DB (SQLite here, PostgreSQL beside it) give what
reading every report in Python gives, for every filter; the page of retry decisions is the asked one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.retries.tries import TryDecision
from airflow_provider_deltacc.ui.aggregate import ViewSummary, summarise, summary_from_reports
from airflow_provider_deltacc.ui.data import read_reports
from airflow_provider_deltacc.ui.filters import PAGE_SIZE, ViewFilters
from airflow_provider_deltacc.ui.pairs import conflict_pairs
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed
from tests.support.ui_metadata import PastTry, TaskRow, add_task_instances, clear_task_instances

pytestmark = pytest.mark.unit

DAGS = ("ui_agg_a", "ui_agg_b")
START = datetime(2026, 11, 10, 8, tzinfo=UTC)
ALL_TIME = {"since": "2026-11-01", "until": "2026-11-30"}


def _waiting(table: str, started: float, version: int) -> dict[str, Any]:
    """A committed try that waited 4 s for admission and, after a lost conflict, 2.5 s for its turn."""
    lost = lost_try(table, started_at=started, winning_version=version - 1, kind=ConflictKind.DELETE_READ)
    report = final_report((committed_try(table, started_at=started, version=version), None))
    report["tries"][0]["admission_wait_s"] = 4.0
    lost_attempt = {**lost["attempts"][0], "queue_s": 2.5, "number": 1}
    report["tries"][0]["attempts"] = [lost_attempt, {**report["tries"][0]["attempts"][0], "number": 2}]
    return report


def _rows() -> list[TaskRow]:
    rows: list[TaskRow] = []
    spellings = ("/lake/orders", "/lake/orders/", "file:/lake/orders")
    for n in range(36):
        dag = DAGS[n % 2]
        ended = START + timedelta(hours=9 * n)
        table = spellings[n % 3] if n % 4 else "/lake/payments"
        started = ended.timestamp() - 120
        run = f"run_{n}"
        # the winner of the next task's conflict: a committed report of version n * 10 + 4
        rows.append(
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
            rows.append(TaskRow(dag, run, "merge", report, try_number=2, past=past, ended=ended))
        elif n % 3 == 1:
            rows.append(TaskRow(dag, run, "merge", _waiting(table, started, n * 10 + 5), ended=ended))
        else:
            lost = lost_try(table, started_at=started, winning_version=n * 10 + 4, winning_operation=None)
            failed = final_report((lost, TryDecision("fail", "a DELETE_READ conflict cannot be retried")))
            rows.append(TaskRow(dag, run, "merge", failed, state="failed", ended=ended, map_index=n % 2))
    odd = {"table": "/lake/odd", "status": "committed", "attempts": [{"wasted_s": "lots", "started_at": "x"}]}
    rows.append(TaskRow(DAGS[0], "run_odd", "odd", odd, ended=START + timedelta(days=2)))
    return rows


@pytest.fixture(scope="module")
def filled(airflow_db: Any) -> Iterator[None]:
    from airflow.utils.session import create_session

    with create_session() as session:
        add_task_instances(session, _rows())
    yield
    with create_session() as session:
        clear_task_instances(session, DAGS)


def _comparable(summary: ViewSummary) -> dict[str, Any]:
    return {
        "tables": {t: [asdict(b) for b in days] for t, days in summary.tables.items()},
        "tasks": {t: [asdict(w) for w in waits] for t, waits in summary.tasks.items()},
        "decision_count": summary.decision_count,
        "decisions": [(r.dag_id, r.run_id, r.task_id, r.map_index, r.try_number) for r in summary.decisions],
        "table_names": summary.table_names,
        "pairs": [asdict(p) for p in conflict_pairs(summary.reports)],
    }


def _both(session: Any, query: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    filters = ViewFilters.from_query(query)
    in_db = summarise(session, filters, DAGS)
    chosen = [filters.dag_id] if filters.dag_id else list(DAGS)
    reports = read_reports(session, dag_ids=chosen, since=filters.since, until=filters.until)
    return _comparable(in_db), _comparable(summary_from_reports(reports, filters))


QUERIES = [
    ALL_TIME,
    {**ALL_TIME, "table": "delta.`/lake/orders`"},
    {**ALL_TIME, "dag_id": DAGS[1], "table": "/lake/payments"},
    {"since": "2026-11-12", "until": "2026-11-14T12:00"},
    {**ALL_TIME, "page": "2", "per_page": "10"},
    {**ALL_TIME, "page": "3", "per_page": "10", "table": "/lake/orders"},
    {**ALL_TIME, "table": "/lake/nowhere"},
]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_the_database_adds_up_what_python_would_on_sqlite(filled: None, query: dict[str, str]) -> None:
    from airflow.utils.session import create_session

    with create_session() as session:
        in_db, in_python = _both(session, query)
    assert in_db == in_python


def test_the_sums_are_the_reports_own(filled: None) -> None:
    from airflow.utils.session import create_session

    with create_session() as session:
        summary = summarise(session, ViewFilters.from_query(ALL_TIME), DAGS)
    assert summary.table_names == ["/lake/odd", "/lake/orders", "/lake/payments"]  # three spellings: one
    orders = summary.tasks["/lake/orders"]
    waiting = next(w for w in orders if w.task_id == "merge")
    assert waiting is orders[0]  # the most waiting and wasted first
    merges = [n for n in range(36) if n % 4]
    assert sum(w.admission_wait_s for w in orders) == pytest.approx(4.0 * sum(n % 3 == 1 for n in merges))
    assert sum(w.queue_wait_s for w in orders) == pytest.approx(2.5 * sum(n % 3 == 1 for n in merges))
    assert summary.decision_count == sum(1 for n in range(36) if n % 3 != 1)
    assert len(summary.decisions) == min(PAGE_SIZE, summary.decision_count)
    newest = summary.decisions[0]
    assert (newest.run_id, newest.decision) == ("run_35", "fail")
    odd = summary.tables["/lake/odd"][0]
    assert (odd.day, odd.commits, odd.wasted_s) == ("unknown", 1, 0.0)  # wrong types read as missing


@pytest.fixture(scope="module")
def pg_session(postgres_url: str) -> Iterator[Any]:
    """A session on a PostgreSQL database with Airflow's tables, filled with the same task instances."""
    from airflow.models.base import Base
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from tests.support.postgres import scratch_database

    with scratch_database(postgres_url, "ui_aggregate") as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            add_task_instances(session, _rows())
            session.commit()
            yield session
        engine.dispose()


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: "&".join(f"{k}={v}" for k, v in q.items()))
def test_the_database_adds_up_what_python_would_on_postgresql(
    pg_session: Any, query: dict[str, str], filled_expectation: Callable[[dict[str, str]], Any]
) -> None:
    in_db, in_python = _both(pg_session, query)
    assert in_db == in_python
    assert in_db == filled_expectation(query)  # and PostgreSQL agrees with SQLite


@pytest.fixture
def filled_expectation(filled: None) -> Callable[[dict[str, str]], Any]:
    def on_sqlite(query: dict[str, str]) -> Any:
        from airflow.utils.session import create_session

        with create_session() as session:
            return _both(session, query)[0]

    return on_sqlite
