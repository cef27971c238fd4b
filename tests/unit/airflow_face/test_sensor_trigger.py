"""DeltaTableTrigger and DeltaTableVersionSensor on real delta-rs tables (no JVM), and the report link."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException, TaskDeferred

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.observability.links import DeltaCommitReportLink
from airflow_provider_deltacc.sensors.table_version import DeltaTableVersionSensor
from airflow_provider_deltacc.triggers.table_version import DeltaTableTrigger

pytestmark = pytest.mark.unit

CTX: Any = {}
NO_OPERATOR: Any = None  # the sensor reads nothing from its context


def _write(path: Path, rows: list[dict[str, Any]], mode: str = "append") -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(str(path), pa.Table.from_pylist(rows), mode=mode, partition_by=["p"])


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "events"
    _write(path, [{"id": 1, "p": "a"}])  # version 0
    return path


def test_trigger_serializes_and_round_trips(table: Path) -> None:
    trigger = DeltaTableTrigger(
        table=str(table),
        condition={"after_version": 0, "operation": None, "partition": {}},
        poll_interval=0.1,
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_provider_deltacc.triggers.table_version.DeltaTableTrigger"
    again = DeltaTableTrigger(**kwargs)
    assert again.serialize() == (classpath, kwargs)


def test_trigger_yields_once_the_table_has_a_newer_commit(table: Path) -> None:
    async def scenario() -> list[Any]:
        trigger = DeltaTableTrigger(
            table=str(table), condition={"after_version": 0, "partition": {"p": "b"}}, poll_interval=0.05
        )
        pending = asyncio.create_task(trigger.run().__anext__())
        await asyncio.sleep(0.5)
        assert not pending.done(), "a trigger whose condition does not hold must not yield"
        await asyncio.to_thread(_write, table, [{"id": 2, "p": "b"}])  # version 1, partition p=b
        return [await asyncio.wait_for(pending, timeout=30)]

    (event,) = asyncio.run(scenario())
    assert event.payload == {
        "status": "success",
        "match": {"table": str(table), "version": 1, "partition": {"p": "b"}},
    }


def test_trigger_matches_an_operation_and_reports_read_errors(table: Path, tmp_path: Path) -> None:
    async def first(trigger: DeltaTableTrigger) -> Any:
        return await asyncio.wait_for(trigger.run().__anext__(), timeout=30)

    _write(table, [{"id": 3, "p": "a"}], mode="overwrite")  # version 1: WRITE (overwrite)
    hit = asyncio.run(first(DeltaTableTrigger(table=str(table), condition={"operation": "write"})))
    assert hit.payload["status"] == "success" and hit.payload["match"]["version"] == 1
    assert hit.payload["match"]["operation"] == "WRITE"

    broken = tmp_path / "broken"
    (broken / "_delta_log").mkdir(parents=True)
    (broken / "_delta_log" / "00000000000000000000.json").write_text("not json\n")
    event = asyncio.run(first(DeltaTableTrigger(table=str(broken), condition={"after_version": -1})))
    assert event.payload["status"] == "error" and event.payload["message"]


def test_sensor_pokes_and_returns_the_match_as_a_deferred_wait_does(table: Path) -> None:
    sensor = DeltaTableVersionSensor(task_id="s", table=str(table), after_version="0", deferrable=False)
    assert sensor.mode == "reschedule"
    assert sensor.poke(CTX).is_done is False
    _write(table, [{"id": 2, "p": "a"}])
    done = sensor.poke(CTX)
    assert done.is_done is True
    assert done.xcom_value is not None and done.xcom_value["version"] == 1


def test_sensor_defers_and_resumes(table: Path) -> None:
    sensor = DeltaTableVersionSensor(
        task_id="s",
        table=str(table),
        after_version=0,
        partition_values={"p": "a"},
        deferrable=True,
        poke_interval=timedelta(seconds=5),
        timeout=600,
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(CTX)
    trigger = deferred.value.trigger
    assert isinstance(trigger, DeltaTableTrigger)
    assert trigger.table == str(table) and trigger.poll_interval == 5
    assert trigger.condition == {"after_version": 0, "operation": None, "partition": {"p": "a"}}
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout is not None and deferred.value.timeout.total_seconds() == 600

    match = {"table": str(table), "version": 1}
    assert sensor.execute_complete(CTX, event={"status": "success", "match": match}) == match
    with pytest.raises(AirflowException, match="OSError: gone"):
        sensor.execute_complete(CTX, event={"status": "error", "message": "OSError: gone"})
    with pytest.raises(AirflowException, match="no event"):
        sensor.execute_complete(CTX, event=None)


def test_sensor_already_satisfied_does_not_defer(table: Path) -> None:
    sensor = DeltaTableVersionSensor(task_id="s", table=str(table), after_version=-1, deferrable=True)
    assert sensor.execute(CTX) == {"table": str(table), "version": 0}


def test_sensor_input_errors() -> None:
    with pytest.raises(DeltaCCInputError):
        DeltaTableVersionSensor(task_id="s", table="/t", after_version="soon")._condition()
    with pytest.raises(DeltaCCInputError, match="catalog table name"):
        DeltaTableVersionSensor(task_id="s", table="sales.orders", after_version=1)._check()
    with pytest.raises(DeltaCCInputError, match="at least one"):
        DeltaTableVersionSensor(task_id="s", table="/t")._condition()


def test_commit_report_link_opens_the_task_instance_in_the_delta_conflicts_view() -> None:
    from airflow.models.taskinstancekey import TaskInstanceKey as Key

    link = DeltaCommitReportLink()
    key = Key(
        dag_id="orders dag", task_id="merge_batch", run_id="manual__2026-11-22T08:00:00+00:00", map_index=3
    )
    url = link.get_link(NO_OPERATOR, ti_key=key)
    assert url.endswith(
        "/deltacc/task-instance/orders%20dag/manual__2026-11-22T08%3A00%3A00%2B00%3A00/merge_batch/3"
    )
    unmapped = Key(dag_id="d", task_id="t", run_id="r", map_index=-1)
    assert link.get_link(NO_OPERATOR, ti_key=unmapped).endswith("/deltacc/task-instance/d/r/t/-1")
    assert link.name == "Delta commit report"
