"""What the Delta conflicts view reads from the metadata DB: reports, tries, reasons, per-day buckets."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.retries.tries import TRIES_KEY
from airflow_provider_deltacc.ui.data import buckets_by_table, read_reports, read_task_instance, try_rows
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed
from tests.support.ui_metadata import PastTry, TaskRow

pytestmark = pytest.mark.unit

ORDERS = "/lake/orders"
DAY1 = datetime(2026, 11, 20, 9, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)


def _committed_row(dag_id: str, task_id: str, table: str, ended: datetime, version: int) -> TaskRow:
    report = final_report((committed_try(table, started_at=ended.timestamp(), version=version), None))
    return TaskRow(dag_id, "run_1", task_id, report, ended=ended)


def _retried_row(dag_id: str, task_id: str, ended: datetime) -> tuple[TaskRow, str]:
    report, reason = retried_then_committed(ORDERS, started_at=ended.timestamp(), version=5)
    past = (PastTry(1, retry_reason=reason),)
    return TaskRow(dag_id, "run_1", task_id, report, try_number=2, past=past, ended=ended), reason


def test_reports_are_read_newest_first_for_the_dags_asked_only(add_rows: Callable[..., None]) -> None:
    add_rows(
        _committed_row("ui_data_a", "old", ORDERS, DAY1, 1),
        _committed_row("ui_data_a", "new", ORDERS, DAY2, 2),
        _committed_row("ui_data_b", "other", ORDERS, DAY2, 3),
        TaskRow("ui_data_a", "run_1", "no_report", None),
    )
    from airflow.utils.session import create_session

    with create_session() as session:
        reports = read_reports(session, dag_ids={"ui_data_a"})
        limited = read_reports(session, dag_ids={"ui_data_a", "ui_data_b"}, limit=1)
        nothing = read_reports(session, dag_ids=set())
    assert [r.task_id for r in reports] == ["new", "old"]
    assert reports[0].table == ORDERS and reports[0].report["table_version"] == 2
    assert len(limited) == 1 and limited[0].dag_id in ("ui_data_a", "ui_data_b")
    assert nothing == []


def test_buckets_count_per_table_and_day_every_try_of_every_report(add_rows: Callable[..., None]) -> None:
    retried, _ = _retried_row("ui_data_c", "merge", DAY1)
    add_rows(retried, _committed_row("ui_data_c", "pay", "/lake/payments/", DAY2, 1))
    from airflow.utils.session import create_session

    with create_session() as session:
        tables = buckets_by_table(read_reports(session, dag_ids={"ui_data_c"}))
    assert list(tables) == [ORDERS, "/lake/payments"]  # sorted, trailing slash dropped
    (orders_day,) = tables[ORDERS]  # try 2 started a minute after try 1: the same day
    assert orders_day.day == "2026-11-20"
    assert orders_day.commits == 1 and orders_day.retries == 1
    assert dict(orders_day.conflicts) == {"APPEND": 1}
    assert orders_day.wasted_s == pytest.approx(0.5)
    (payments_day,) = tables["/lake/payments"]
    assert (payments_day.day, payments_day.commits, payments_day.retries) == ("2026-11-21", 1, 0)
    assert not payments_day.conflicts


def test_the_task_view_reads_the_report_and_airflows_reason_and_state_of_each_try(
    add_rows: Callable[..., None],
) -> None:
    row, reason = _retried_row("ui_data_d", "merge", DAY1)
    add_rows(row)
    from airflow.utils.session import create_session

    with create_session() as session:
        report, reasons, states = read_task_instance(session, "ui_data_d", "run_1", "merge", -1)
    assert report is not None
    assert reasons == {1: reason}
    assert states == {1: "up_for_retry", 2: "success"}
    rows = try_rows(report, reasons)
    assert [(r.try_number, r.status, r.decision) for r in rows] == [
        (1, "conflict_exhausted", "retry"),
        (2, "committed", None),
    ]
    assert rows[0].reason == reason and rows[0].wasted_s == pytest.approx(0.5)
    assert rows[0].attempts[0]["conflict"]["winning_version"] == 4


def test_a_try_without_a_reason_in_its_report_takes_airflows_retry_reason() -> None:
    from airflow_provider_deltacc.ui.data import TaskReport

    lost = lost_try(ORDERS, started_at=DAY1.timestamp(), kind=ConflictKind.DELETE_READ)
    report = final_report((lost, None), (committed_try(ORDERS, started_at=DAY2.timestamp(), version=2), None))
    rows = try_rows(TaskReport("d", "r", "t", -1, report), {1: "kept by Airflow"})
    assert [r.reason for r in rows] == ["kept by Airflow", None]


def test_while_a_try_runs_the_task_view_reads_the_tries_from_the_task_state_store(
    add_rows: Callable[..., None],
) -> None:
    """XCom is cleared when a try starts; the earlier tries are still in the task state store."""
    from airflow.models.dagrun import DagRun
    from airflow.models.task_state_store import TaskStateStoreModel
    from airflow.utils.session import create_session

    lost = lost_try(ORDERS, started_at=DAY1.timestamp())
    entry = {**lost, "try_number": 1, "decision": "retry", "reason": "try again"}
    add_rows(TaskRow("ui_data_e", "run_1", "merge", None, state="running", try_number=2, past=(PastTry(1),)))
    with create_session() as session:
        run = session.query(DagRun).filter_by(dag_id="ui_data_e", run_id="run_1").one()
        session.add(
            TaskStateStoreModel(
                dag_run_id=run.id,
                dag_id="ui_data_e",
                run_id="run_1",
                task_id="merge",
                map_index=-1,
                key=TRIES_KEY,
                value=json.dumps([entry]),
                updated_at=datetime.now(UTC),
            )
        )
    try:
        with create_session() as session:
            report, _, states = read_task_instance(session, "ui_data_e", "run_1", "merge", -1)
    finally:
        with create_session() as session:
            session.query(TaskStateStoreModel).filter_by(dag_id="ui_data_e").delete()
    assert report is not None
    assert [(r.try_number, r.decision, r.reason) for r in try_rows(report)] == [(1, "retry", "try again")]
    assert states == {1: "up_for_retry", 2: "running"}


def test_a_task_instance_without_any_report_has_none(add_rows: Callable[..., None]) -> None:
    add_rows(TaskRow("ui_data_f", "run_1", "merge", None))
    from airflow.utils.session import create_session

    with create_session() as session:
        report, reasons, states = read_task_instance(session, "ui_data_f", "run_1", "merge", -1)
    assert (report, reasons, states) == (None, {}, {1: "success"})
