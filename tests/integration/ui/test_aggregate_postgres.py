"""The conflicts page's numbers added up by PostgreSQL give what reading every report in Python gives, and
what SQLite adds up (``tests/unit/ui/test_aggregate.py``), for every filter, and were added up in
PostgreSQL's JSON SQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.json_sql import PostgreSQL, SQLite
from tests.support.ui_aggregate import DAGS, QUERIES, in_python, in_sql, query_id, rows
from tests.support.ui_metadata import add_task_instances, clear_task_instances

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]


@pytest.fixture(scope="module")
def pg_session(postgres_url: str) -> Iterator[Any]:
    """A session on a PostgreSQL database with Airflow's tables, filled with the task instances."""
    from airflow.models import import_all_models
    from airflow.models.base import Base
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from tests.support.postgres import scratch_database

    with scratch_database(postgres_url, "ui_aggregate") as url:
        engine = create_engine(url)
        import_all_models()  # Base.metadata holds only the models imported so far
        Base.metadata.create_all(engine)
        with Session(engine) as session:
            add_task_instances(session, rows())
            session.commit()
            yield session
        engine.dispose()


@pytest.fixture(scope="module")
def filled(airflow_db: Any) -> Iterator[None]:
    """The same task instances in the test session's SQLite metadata DB."""
    from airflow.utils.session import create_session

    with create_session() as session:
        add_task_instances(session, rows())
    yield
    with create_session() as session:
        clear_task_instances(session, DAGS)


@pytest.fixture
def on_sqlite(filled: None, monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, str]], Any]:
    """What SQLite adds up for a request (checked to be added up in SQLite's SQL)."""

    def added_up(query: dict[str, str]) -> Any:
        from airflow.utils.session import create_session

        with create_session() as session:
            return in_sql(session, query, SQLite(), monkeypatch)

    return added_up


@pytest.mark.parametrize("query", QUERIES, ids=query_id)
def test_the_database_adds_up_what_python_would_on_postgresql(
    pg_session: Any,
    query: dict[str, str],
    on_sqlite: Callable[[dict[str, str]], Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    in_db = in_sql(pg_session, query, PostgreSQL(), monkeypatch)  # and checked that PostgreSQL added it up
    assert in_db == in_python(pg_session, ViewFilters.from_query(query))
    assert in_db == on_sqlite(query)  # and PostgreSQL agrees with SQLite
