"""The conflicts page's summary table on the test session's SQLite metadata DB (made by ``airflow db
migrate``, which ran the provider's migration): a report is summed once, in SQLite's JSON SQL; a re-run's
report replaces its task instance's rows; reports pushed before their rows existed are counted; a deleted
task instance takes its rows; a database without the table gets a message naming the fix. PostgreSQL's half,
with two fillers at once, is ``tests/integration/ui/test_aggregate_postgres.py``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCSummaryTableMissing
from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY
from airflow_provider_deltacc.ui.aggregate import summarise
from airflow_provider_deltacc.ui.bound_sql import bound
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.json_sql import SQLite
from airflow_provider_deltacc.ui.summary_fill import fill_summary
from airflow_provider_deltacc.ui.summary_table import SUMMARY_TABLE
from tests.support.commit_reports import committed_try, final_report, lost_try
from tests.support.ui_aggregate import (
    ALL_TIME,
    DAGS,
    comparable,
    filled_sqlite,
    fresh_summary,
    in_python,
    path_taken,
    summed_rows,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def filled(airflow_db: Any) -> Iterator[None]:
    with filled_sqlite():
        yield


def _rows_of(session: Any, dag_id: str, run_id: str, task_id: str) -> list[Any]:
    where = "dag_id = :d AND run_id = :r AND task_id = :t"
    sql = f"SELECT pushed, try_pos, lost FROM {SUMMARY_TABLE} WHERE {where}"
    return session.execute(bound(sql, pushed_out=True), {"d": dag_id, "r": run_id, "t": task_id}).all()


def test_a_report_is_summed_once_and_counted_as_python_counts_it(
    filled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.utils.session import create_session

    filters = ViewFilters.from_query(ALL_TIME)
    with create_session() as session:
        fresh_summary(session)  # as after an upgrade: reports without rows
        with path_taken(session, monkeypatch) as first:
            summed = comparable(summarise(session, filters, DAGS))
        assert first.summed(session, SQLite())
        assert summed == in_python(session, filters)
        rows = summed_rows(session)
        assert rows >= 73  # every report has one row at least
        with path_taken(session, monkeypatch) as second:
            again = comparable(summarise(session, filters, DAGS))
        assert not second.summed(session, SQLite())
        assert again == summed and summed_rows(session) == rows


def test_a_rerun_report_replaces_the_rows_of_the_one_before(filled: None) -> None:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import update

    filters = ViewFilters.from_query(ALL_TIME)
    ids = {"dag_id": DAGS[0], "run_id": "run_0", "task_id": "winner"}
    with create_session() as session:
        summarise(session, filters, DAGS)
        (before,) = _rows_of(session, **ids)
        # the re-run: a try that lost a conflict, then one that committed; pushed a minute later
        began = before.pushed.timestamp()
        lost = lost_try("/lake/payments", started_at=began, winning_version=3)
        committed = committed_try("/lake/payments", started_at=began + 30, version=9)
        rerun = final_report((lost, None), (committed, None))
        session.execute(
            update(XComModel)
            .where(XComModel.key == REPORT_XCOM_KEY, *(getattr(XComModel, k) == v for k, v in ids.items()))
            .values(value=rerun, timestamp=before.pushed + timedelta(minutes=1))
        )
        assert comparable(summarise(session, filters, DAGS)) == in_python(session, filters)
        after = _rows_of(session, **ids)
    assert {row.pushed for row in after} == {before.pushed + timedelta(minutes=1)}
    assert sorted((row.try_pos, row.lost) for row in after) == [(1, 1), (2, 0)]


def test_a_deleted_task_instance_takes_its_rows(filled: None) -> None:
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import delete

    ids = {"dag_id": DAGS[1], "run_id": "run_1", "task_id": "merge"}
    with create_session() as session:
        summarise(session, ViewFilters.from_query(ALL_TIME), DAGS)
        assert _rows_of(session, **ids)
        for model in (XComModel, TaskInstance):
            session.execute(delete(model).filter_by(**ids))
        assert _rows_of(session, **ids) == []  # the foreign key's ON DELETE CASCADE


def test_the_page_sums_only_what_the_range_and_the_readable_dags_hold(filled: None) -> None:
    from airflow.utils.session import create_session

    window: dict[str, Any] = {"dag_ids": [DAGS[1]]}
    with create_session() as session:
        fresh_summary(session)
        filters = ViewFilters.from_query({"since": "2026-11-12", "until": "2026-11-14"})
        summed = fill_summary(
            session, SQLite(), {**window, "since": filters.since, "until": filters.until}, cap=3
        )
        assert summed == 3  # the cap: the newest three reports of the range
        sql = f"SELECT DISTINCT dag_id, pushed FROM {SUMMARY_TABLE} WHERE dag_id IN :dag_ids"
        found = session.execute(bound(sql, pushed_out=True), {"dag_ids": list(DAGS)}).all()
    assert {row.dag_id for row in found} == {DAGS[1]}
    assert all(filters.since <= row.pushed < filters.until for row in found)


def test_a_database_without_the_table_names_the_command_that_makes_it(tmp_path: Any) -> None:
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    engine = create_engine(f"sqlite:///{tmp_path / 'bare.db'}")
    with (
        Session(engine) as session,
        pytest.raises(DeltaCCSummaryTableMissing, match="Run `airflow db migrate`"),
    ):
        summarise(session, ViewFilters.from_query(ALL_TIME), DAGS)
    engine.dispose()


def test_a_range_past_the_cap_is_read_from_its_newest_reports_as_python_reads_them(
    filled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.utils.session import create_session

    from airflow_provider_deltacc.ui import aggregate
    from airflow_provider_deltacc.ui.aggregate import summary_from_reports
    from airflow_provider_deltacc.ui.data import read_reports

    monkeypatch.setattr(aggregate, "REPORT_CAP", 6)  # the newest three runs: a winner and a MERGE each
    filters = ViewFilters.from_query(ALL_TIME)
    with create_session() as session:
        fresh_summary(session)
        summary = summarise(session, filters, DAGS)
        newest = read_reports(session, dag_ids=DAGS, limit=6, since=filters.since, until=filters.until)
    assert summary.bounded == 6
    assert comparable(summary) == comparable(summary_from_reports(newest, filters))
