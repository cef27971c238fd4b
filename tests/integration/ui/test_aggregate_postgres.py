"""The conflicts page's numbers added up by PostgreSQL, on the schema ``airflow db migrate`` builds (from the
ORM models, as on a new deployment, and from Airflow's migration scripts, as on an upgraded one), give what
reading every report in Python gives, and what SQLite adds up (``tests/unit/ui/test_aggregate.py``), for
every filter, and were added up in PostgreSQL's JSON SQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.ui.aggregate import REPORT_CAP, summarise
from airflow_provider_deltacc.ui.bound_sql import bound
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.json_sql import PostgreSQL, SQLite
from airflow_provider_deltacc.ui.summary_fill import fill_summary
from airflow_provider_deltacc.ui.summary_table import SUMMARY_TABLE, VERSION_TABLE
from tests.support.ui_aggregate import (
    ALL_TIME,
    DAGS,
    QUERIES,
    comparable,
    filled_sqlite,
    fresh_summary,
    in_python,
    in_sql,
    query_id,
    rows,
    summed_rows,
)
from tests.support.ui_metadata import add_task_instances

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]


@pytest.fixture(scope="module", params=["orm", "migration_files"])
def migrated_url(
    request: pytest.FixtureRequest, postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A PostgreSQL database with Airflow's schema as ``airflow db migrate`` builds it (as an Airflow stack's
    is: :meth:`~tests.support.airflow_stack.AirflowStack.migrate`, no component started): on an empty
    database the ORM models' tables, as a new deployment gets them (``orm``), and, as a deployment upgraded
    from an older Airflow has them, Airflow's migration scripts run one by one (``migration_files``)."""
    from tests.support.airflow_stack import AirflowStack, StackOptions
    from tests.support.postgres import scratch_database

    with scratch_database(postgres_url, "ui_aggregate") as url:
        work = tmp_path_factory.mktemp("ui_aggregate")
        stack = AirflowStack(work=work, database_url=url, options=StackOptions(components=()))
        stack.migrate(migration_files=request.param == "migration_files")
        yield url


@pytest.fixture(scope="module")
def pg_session(migrated_url: str) -> Iterator[Any]:
    """A session on the migrated database, filled with the task instances."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    engine = create_engine(migrated_url)
    with Session(engine) as session:
        add_task_instances(session, rows())
        session.commit()
        yield session
    engine.dispose()


def test_the_schema_is_airflows_migrated_one(pg_session: Any) -> None:
    """The reports' column is what Airflow's migrations make it (JSONB, which PostgreSQL's JSON SQL reads),
    and the database is at Airflow's head revision."""
    import airflow
    from alembic.script import ScriptDirectory
    from sqlalchemy import text

    column = "SELECT data_type FROM information_schema.columns WHERE table_name = 'xcom' AND column_name = :c"
    assert pg_session.execute(text(column), {"c": "value"}).scalar() == "jsonb"
    revision = pg_session.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert revision == ScriptDirectory(str(Path(airflow.__file__).parent / "migrations")).get_current_head()


def test_airflow_db_migrate_made_the_providers_summary_table(pg_session: Any) -> None:
    """``airflow db migrate`` found the provider's DB manager and ran its migrations: the summary table, its
    foreign key to ``task_instance`` (rows go with their task instance) and its own version table at the
    provider's head revision."""
    from sqlalchemy import inspect, text

    from airflow_provider_deltacc.ui.summary_db import REPORT_INDEX, ReportSummaryDBManager

    inspector = inspect(pg_session.get_bind())
    (foreign_key,) = inspector.get_foreign_keys(SUMMARY_TABLE)
    assert foreign_key["referred_table"] == "task_instance"
    assert foreign_key["options"].get("ondelete") == "CASCADE"
    assert {i["name"] for i in inspector.get_indexes(SUMMARY_TABLE)} >= {"idx_deltacc_summary_pushed"}
    revision = pg_session.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    assert revision == ReportSummaryDBManager(pg_session).get_script_object().get_current_head()
    assert REPORT_INDEX in {i["name"] for i in inspector.get_indexes("xcom")}


def test_the_search_for_reports_without_rows_can_read_the_report_index_alone(pg_session: Any) -> None:
    """The search names the reports' key as the index's predicate does, so PostgreSQL can read the
    provider's partial index instead of the ``xcom`` rows (which it does on a big table: bench/ui.py; on
    these few rows it would rather scan, so the scan is ruled out to ask whether the index fits)."""
    from sqlalchemy import text

    from airflow_provider_deltacc.ui.summary_db import REPORT_INDEX
    from airflow_provider_deltacc.ui.summary_fill import _missing_sql

    filters = ViewFilters.from_query(ALL_TIME)
    params = {"dag_ids": list(DAGS), "since": filters.since, "until": filters.until, "cap": 100}
    pg_session.execute(text("SET LOCAL enable_seqscan = off"))
    plan = "\n".join(row[0] for row in pg_session.execute(bound("EXPLAIN " + _missing_sql()), params))
    pg_session.rollback()
    assert re.search(rf"Index Only Scan (Backward )?using {REPORT_INDEX} on xcom", plan), plan


@pytest.fixture(scope="module")
def filled(airflow_db: Any) -> Iterator[None]:
    """The same task instances in the test session's SQLite metadata DB."""
    with filled_sqlite():
        yield


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
    pg_session.commit()  # the summary rows, and the fill's turn, as the page's session leaves them
    assert in_db == in_python(pg_session, ViewFilters.from_query(query))
    assert in_db == on_sqlite(query)  # and PostgreSQL agrees with SQLite


def test_two_fillers_at_once_sum_each_report_once(pg_session: Any, migrated_url: str) -> None:
    """Two api-servers open the page on reports without rows at the same time: the second waits for the
    first's turn to end, then finds nothing left to sum."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    fresh_summary(pg_session)
    pg_session.commit()
    window = {"dag_ids": list(DAGS)} | _times(ViewFilters.from_query(ALL_TIME))
    engine = create_engine(migrated_url)
    with Session(engine) as first, Session(engine) as second:
        assert fill_summary(first, PostgreSQL(), window, cap=REPORT_CAP) > 0
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(fill_summary, second, PostgreSQL(), window, cap=REPORT_CAP)
            with pytest.raises(FutureTimeout):
                waiting.result(timeout=2.0)  # the second filler waits for the first's turn
            first.commit()
            assert waiting.result(timeout=30.0) == 0
        second.commit()
    engine.dispose()
    filters = ViewFilters.from_query(ALL_TIME)
    once = summed_rows(pg_session)
    assert comparable(summarise(pg_session, filters, DAGS)) == in_python(pg_session, filters)
    assert summed_rows(pg_session) == once


def _times(filters: ViewFilters) -> dict[str, Any]:
    return {"since": filters.since, "until": filters.until}
