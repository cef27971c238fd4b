"""Task instances in an Airflow metadata DB as a Delta task leaves them: the ``task_instance`` row, one
``task_instance_history`` row per earlier try (with Airflow's ``retry_reason``) and the ``deltacc_report``
XCom (stored as the task runner stores it: the JSON value itself).

Bulk inserts through the models' tables, so ``bench/ui.py`` can fill a DB with 10,000 task instances in
seconds; the unit tests of the UI use the same rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

BUNDLE = "dags-folder"


@dataclass(frozen=True)
class PastTry:
    """An earlier try of a task instance, as ``task_instance_history`` keeps it."""

    try_number: int
    state: str = "up_for_retry"
    retry_reason: str | None = None


@dataclass(frozen=True)
class TaskRow:
    """One task instance: where it ran, its state and try, its report (None: none pushed), its past tries."""

    dag_id: str
    run_id: str
    task_id: str
    report: dict[str, Any] | None
    map_index: int = -1
    state: str = "success"
    try_number: int = 1
    past: tuple[PastTry, ...] = ()
    ended: datetime = field(default_factory=lambda: datetime.now(UTC))


def _chunks(rows: Iterable[TaskRow], size: int) -> Iterator[list[TaskRow]]:
    it = iter(rows)
    while chunk := list(islice(it, size)):
        yield chunk


def _ensure_dags_and_runs(
    session: Session, rows: list[TaskRow], runs: dict[tuple[str, str], int], versions: dict[str, Any]
) -> None:
    from airflow.models.dag import DagModel
    from airflow.models.dag_version import DagVersion
    from airflow.models.dagbundle import DagBundleModel
    from airflow.models.dagrun import DagRun
    from sqlalchemy import insert, select

    if session.get(DagBundleModel, BUNDLE) is None:
        session.execute(insert(DagBundleModel.__table__).values(name=BUNDLE, active=True))
    known = set(session.scalars(select(DagModel.dag_id)))
    for dag_id in sorted({r.dag_id for r in rows} - known):
        session.execute(
            insert(DagModel.__table__).values(
                dag_id=dag_id,
                bundle_name=BUNDLE,
                is_paused=False,
                is_stale=False,
                timetable_partitioned=False,
                timetable_periodic=False,
                max_active_tasks=16,
                max_consecutive_failed_dag_runs=0,
                has_task_concurrency_limits=False,
            )
        )
        now = datetime.now(UTC)
        session.execute(
            insert(DagVersion.__table__).values(
                id=uuid.uuid4(), dag_id=dag_id, version_number=1, created_at=now, last_updated=now
            )
        )
    for dag_id in {r.dag_id for r in rows} - versions.keys():
        versions[dag_id] = session.scalar(select(DagVersion.id).where(DagVersion.dag_id == dag_id))
    for dag_id, run_id in sorted({(r.dag_id, r.run_id) for r in rows} - runs.keys()):
        found = session.scalar(select(DagRun.id).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        if found is None:
            session.execute(
                insert(DagRun.__table__).values(
                    dag_id=dag_id,
                    run_id=run_id,
                    run_type="manual",
                    state="success",
                    clear_number=0,
                    span_status="not_started",
                    run_after=datetime.now(UTC),
                )
            )
            found = session.scalar(select(DagRun.id).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        runs[(dag_id, run_id)] = int(found)


def add_task_instances(session: Session, rows: Iterable[TaskRow], *, chunk: int = 1000) -> int:
    """Insert ``rows`` (their DAGs and runs are created when missing); returns how many were inserted."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskinstancehistory import TaskInstanceHistory
    from airflow.models.xcom import XComModel
    from sqlalchemy import insert

    runs: dict[tuple[str, str], int] = {}
    versions: dict[str, Any] = {}
    count = 0
    for batch in _chunks(rows, chunk):
        _ensure_dags_and_runs(session, batch, runs, versions)
        common: dict[str, Any] = {"pool": "default_pool", "pool_slots": 1, "span_status": "ended"}
        instances, history, xcoms = [], [], []
        for row in batch:
            ids = {
                "dag_id": row.dag_id,
                "run_id": row.run_id,
                "task_id": row.task_id,
                "map_index": row.map_index,
            }
            started = row.ended - timedelta(seconds=30)
            shown = {
                "task_display_name": row.task_id,
                "operator": "DeltaMergeOperator",
                "dag_version_id": versions[row.dag_id],
                "queued_dttm": started,
            }
            instances.append(
                {
                    **ids,
                    **common,
                    **shown,
                    "id": uuid.uuid4(),
                    "state": row.state,
                    "try_number": row.try_number,
                    "max_tries": max(row.try_number, 2),
                    "start_date": started,
                    "end_date": row.ended,
                }
            )
            for past in row.past:
                history.append(
                    {
                        **ids,
                        **common,
                        **shown,
                        "task_instance_id": uuid.uuid4(),
                        "state": past.state,
                        "try_number": past.try_number,
                        "max_tries": max(row.try_number, 2),
                        "retry_reason": past.retry_reason,
                        "start_date": started - timedelta(minutes=1),
                        "end_date": started - timedelta(seconds=40),
                    }
                )
            if row.report is not None:
                xcoms.append(
                    {
                        **ids,
                        "dag_run_id": runs[(row.dag_id, row.run_id)],
                        "key": REPORT_XCOM_KEY,
                        "value": row.report,
                        "timestamp": row.ended,
                    }
                )
        session.execute(insert(TaskInstance.__table__), instances)
        if history:
            session.execute(insert(TaskInstanceHistory.__table__), history)
        if xcoms:
            session.execute(insert(XComModel.__table__), xcoms)
        session.flush()
        count += len(batch)
    return count


def clear_task_instances(session: Session, dag_ids: Iterable[str]) -> None:
    """Delete the DAGs ``dag_ids`` with their runs, task instances, history and XComs (test isolation)."""
    from airflow.models.dag import DagModel
    from airflow.models.dag_version import DagVersion
    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskinstancehistory import TaskInstanceHistory
    from airflow.models.xcom import XComModel
    from sqlalchemy import delete

    ids = list(dag_ids)
    for model in (XComModel, TaskInstanceHistory, TaskInstance, DagRun, DagVersion, DagModel):
        session.execute(delete(model).where(model.dag_id.in_(ids)))  # type: ignore[attr-defined]
    session.flush()
