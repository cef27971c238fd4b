"""The conflicts page's numbers added up by the metadata DB (SQLite here; PostgreSQL, with Airflow's migrated
schema, in ``tests/integration/ui/test_aggregate_postgres.py``) give what reading every report in Python
gives, for every filter, and were added up in SQL; a database without JSON SQL reads the reports in Python;
the page of retry decisions is the asked one."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_provider_deltacc.ui.aggregate import summarise
from airflow_provider_deltacc.ui.filters import PAGE_SIZE, ViewFilters
from airflow_provider_deltacc.ui.json_sql import SQLite, json_dialect
from tests.support.ui_aggregate import (
    ALL_TIME,
    DAGS,
    QUERIES,
    comparable,
    filled_sqlite,
    in_python,
    in_sql,
    path_taken,
    query_id,
)

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def filled(airflow_db: Any) -> Iterator[None]:
    with filled_sqlite():
        yield


@pytest.mark.parametrize("query", QUERIES, ids=query_id)
def test_the_database_adds_up_what_python_would_on_sqlite(
    filled: None, query: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.utils.session import create_session

    with create_session() as session:
        in_db = in_sql(session, query, SQLite(), monkeypatch)  # and checked that SQLite added it up
        assert in_db == in_python(session, ViewFilters.from_query(query))


class _NamedAs:
    """A session whose engine says it is another database (by name only); everything else is the session's."""

    def __init__(self, session: Any, name: str) -> None:
        self._session = session
        self._bind = SimpleNamespace(dialect=SimpleNamespace(name=name))

    def get_bind(self) -> Any:
        return self._bind

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def test_a_database_without_json_sql_reads_the_reports_in_python(
    filled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.utils.session import create_session

    assert json_dialect("mysql") is None  # the case: a database the view has no JSON SQL for
    filters = ViewFilters.from_query(ALL_TIME)
    with create_session() as session, path_taken(session, monkeypatch) as taken:
        summary = summarise(_NamedAs(session, "mysql"), filters, DAGS)  # type: ignore[arg-type]
        assert taken.python_reads == 1
        assert len(taken.statements) == 1  # the read of the reports, and no statement of the SQL path
        assert comparable(summary) == in_python(session, filters)


def test_the_sums_are_the_reports_own(filled: None) -> None:
    from airflow.utils.session import create_session

    with create_session() as session:
        summary = summarise(session, ViewFilters.from_query(ALL_TIME), DAGS)
    assert summary.table_names == ["/lake/odd", "/lake/orders", "/lake/payments"]  # three spellings: one
    orders = summary.tasks["/lake/orders"]
    waiting = next(w for w in orders if w.task_id == "merge")
    assert waiting is orders[0]  # the most waiting and wasted first
    waited = sum(n % 3 == 1 for n in range(36) if n % 4)  # the merges that waited
    assert sum(w.times.first_turn_wait_s for w in orders) == pytest.approx(4.0 * waited)
    assert sum(w.times.turn_wait_s for w in orders) == pytest.approx(2.5 * waited)
    assert summary.decision_count == sum(1 for n in range(36) if n % 3 != 1)
    assert len(summary.decisions) == min(PAGE_SIZE, summary.decision_count)
    newest = summary.decisions[0]
    assert (newest.run_id, newest.decision) == ("run_35", "fail")
    odd = summary.tables["/lake/odd"][0]
    assert (odd.day, odd.commits, odd.wasted_s) == ("unknown", 1, 0.0)  # wrong types read as missing
