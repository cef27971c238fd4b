"""OPTIMIZE and VACUUM consult the gate: defer while blocked, lease atomically on resume, guard retention."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException, TaskDeferred

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.gate import GateRequest, WriteWindow
from airflow_provider_deltacc.leases import SqliteLeaseStore, store_from_url
from airflow_provider_deltacc.operators import DeltaOptimizeOperator, DeltaVacuumOperator
from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor
from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger
from tests.unit.maintenance.helpers import RecordingHook, context, first_event, grant, logged, with_hook

pytestmark = pytest.mark.unit

TABLE = "sales.orders"  # a catalog name: nothing is read with delta-rs
D19, D20 = {"date": "2026-11-19"}, {"date": "2026-11-20"}


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leases.db'}"


def _optimize(store_url: str, **kwargs: Any) -> tuple[DeltaOptimizeOperator, RecordingHook]:
    hook = RecordingHook(store_url, kwargs.get("table", TABLE))
    defaults: dict[str, Any] = {
        "task_id": "optimize",
        "table": TABLE,
        "lease_store_url": store_url,
        "poll_interval": 0.1,
        "deferrable": True,
    }
    return with_hook(DeltaOptimizeOperator(**{**defaults, **kwargs}), hook), hook


def _vacuum(store_url: str, **kwargs: Any) -> tuple[DeltaVacuumOperator, RecordingHook]:
    hook = RecordingHook(store_url, kwargs.get("table", TABLE))
    defaults: dict[str, Any] = {
        "task_id": "vacuum",
        "table": TABLE,
        "lease_store_url": store_url,
        "poll_interval": 0.1,
        "deferrable": True,
    }
    return with_hook(DeltaVacuumOperator(**{**defaults, **kwargs}), hook), hook


def _maint_context(task_id: str) -> dict[str, Any]:
    return context(dag_id="maint", task_id=task_id)


def test_optimize_defers_while_a_merge_lease_is_active(
    store_url: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.MERGE, [D20])
    op, hook = _optimize(store_url, poll_interval=12.0)
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(_maint_context("optimize"))
    trigger = deferred.value.trigger
    assert isinstance(trigger, DeltaGateTrigger)
    assert deferred.value.method_name == "execute_complete"
    assert set(deferred.value.kwargs or {}) == {"waiting_since"}
    request = GateRequest.from_dict(trigger.request)
    assert (request.table, request.maintenance_op, request.partitions) == (TABLE, OpKind.OPTIMIZE, None)
    assert trigger.lease_store_url == store_url and trigger.poll_interval == 12.0
    assert hook.specs == []
    assert "waiting: MERGE lease on date=2026-11-20 by ingest.merge_orders/manual__1 since" in logged(
        caplog, capsys
    )


def test_optimize_runs_under_its_own_lease_and_releases_it(store_url: str) -> None:
    op, hook = _optimize(store_url)
    report = op.execute(_maint_context("optimize"))
    assert report["status"] == "committed"
    [[lease]] = hook.active_during
    assert (lease.op_kind, lease.holder, lease.partitions) == (
        OpKind.OPTIMIZE,
        "maint.optimize/manual__2026-11-20",
        None,
    )
    with store_from_url(store_url) as store:
        assert store.active(TABLE) == []


def test_resume_after_the_trigger_runs_the_job(store_url: str) -> None:
    with store_from_url(store_url) as store:
        lease = grant(store, TABLE, OpKind.UPDATE)
        op, hook = _optimize(store_url, zorder_by=["customer"])
        with pytest.raises(TaskDeferred) as deferred:
            op.execute(_maint_context("optimize"))
        threading.Timer(0.3, store.release, args=(lease.lease_id,)).start()
        event = asyncio.run(first_event(deferred.value.trigger, 10))
    assert event["status"] == "go"
    report = op.execute_complete(_maint_context("optimize"), event=event, **(deferred.value.kwargs or {}))
    assert report["status"] == "committed"
    assert [lease.op_kind for lease in hook.active_during[0]] == [OpKind.OPTIMIZE_ZORDER]
    assert hook.specs[0]["options"] == {"zorder_by": ["customer"], "partition_values": None, "full": False}


def test_resume_defers_again_when_a_writer_won_the_race(store_url: str) -> None:
    op, hook = _optimize(store_url)
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.MERGE, holder="ingest.late_merge/manual__2")
    go = {"status": "go", "decision": {"go": True, "reason": "go: nothing active", "wait_until": None}}
    with pytest.raises(TaskDeferred) as again:
        op.execute_complete(_maint_context("optimize"), event=go, waiting_since=datetime.now(UTC).isoformat())
    assert isinstance(again.value.trigger, DeltaGateTrigger)
    assert hook.specs == []


def test_lost_race_at_the_lease_defers_again(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate said go, but a writer took its lease before the maintenance lease: the lease refuses."""
    op, hook = _optimize(store_url)
    real = GateRequest.decide

    def go_then_writer_starts(self: GateRequest, store: Any, now: Any = None) -> Any:
        decision = real(self, store, now)
        grant(store, TABLE, OpKind.DELETE, holder="ingest.racer/manual__3")
        return decision

    monkeypatch.setattr(GateRequest, "decide", go_then_writer_starts)
    with pytest.raises(TaskDeferred):
        op.execute(_maint_context("optimize"))
    assert hook.specs == []
    with store_from_url(store_url) as store:
        assert [lease.op_kind for lease in store.history(TABLE)] == [OpKind.DELETE]


@pytest.mark.parametrize(
    ("event", "error", "text"),
    [
        ({"status": "error", "message": "OperationalError: no server"}, AirflowException, "no server"),
        (None, AirflowException, "no event"),
        (
            {"status": "refused", "decision": {"reason": "refused: VACUUM retention 1 h is shorter"}},
            DeltaCCInputError,
            "VACUUM retention 1 h",
        ),
    ],
)
def test_resume_fails_on_error_and_refusal(
    store_url: str, event: dict[str, Any] | None, error: type[Exception], text: str
) -> None:
    op, _hook = _vacuum(store_url)
    with pytest.raises(error, match=text):
        op.execute_complete(_maint_context("vacuum"), event=event)


def test_only_closed_partitions_compacts_the_quiet_ones(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.MERGE, [D20])
    op, hook = _optimize(
        store_url,
        partition_values=[D19, D20],
        only_closed_partitions=True,
        table_traits={"partitioned": True},
    )
    op.execute(_maint_context("optimize"))
    assert hook.specs[0]["options"]["partition_values"] == [D19]
    optimize = [lease for lease in hook.active_during[0] if lease.op_kind is OpKind.OPTIMIZE]
    assert optimize[0].partitions == [D19]


def test_explicit_partitions_wait_until_all_are_closed(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.MERGE, [D20])
    op, hook = _optimize(
        store_url,
        partition_values=[D19, D20],
        only_closed_partitions=False,
        table_traits={"partitioned": True},
    )
    with pytest.raises(TaskDeferred):
        op.execute(_maint_context("optimize"))
    assert hook.specs == []


def test_declared_window_defers_optimize(store_url: str) -> None:
    now = datetime.now(UTC)
    window = {
        "table": TABLE,
        "start": (now - timedelta(minutes=1)).isoformat(),
        "end": (now + timedelta(minutes=5)).isoformat(),
    }
    op, _hook = _optimize(store_url, write_windows=[window])
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(_maint_context("optimize"))
    assert GateRequest.from_dict(deferred.value.trigger.request).windows[0].end == datetime.fromisoformat(
        window["end"]
    )


def test_non_deferrable_polls_in_the_worker(store_url: str) -> None:
    with store_from_url(store_url) as store:
        lease = grant(store, TABLE, OpKind.MERGE)
        started = time.monotonic()  # before the timer: the release comes at least 0.4 s after it
        threading.Timer(0.4, store.release, args=(lease.lease_id,)).start()
        op, hook = _optimize(store_url, deferrable=False, poll_interval=0.1)
        op.execute(_maint_context("optimize"))
        blocker, optimize = store.history(TABLE)
    assert time.monotonic() - started >= 0.4
    assert len(hook.specs) == 1
    assert optimize.op_kind is OpKind.OPTIMIZE and blocker.released_at is not None
    assert optimize.acquired_at >= blocker.released_at


def test_non_deferrable_gives_up_after_gate_wait_timeout(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.DELETE)
    op, hook = _vacuum(store_url, deferrable=False, poll_interval=0.1, gate_wait_timeout=0.3)
    with pytest.raises(
        AirflowException, match=r"gave up waiting .* gate_wait_timeout=0.3; last decision: waiting: DELETE"
    ):
        op.execute(_maint_context("vacuum"))
    assert hook.specs == []


def test_vacuum_waits_for_every_writer_even_appends(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.BLIND_APPEND)
    op, _hook = _vacuum(store_url)
    with pytest.raises(TaskDeferred):
        op.execute(_maint_context("vacuum"))


def test_vacuum_refuses_retention_below_the_default(store_url: str) -> None:
    op, hook = _vacuum(store_url, retention_hours=1)
    with pytest.raises(DeltaCCInputError) as refused:
        op.execute(_maint_context("vacuum"))
    message = str(refused.value)
    assert refused.value.field == "retention_hours"
    assert "VACUUM retention 1 h is shorter than the table's retention of 168 h" in message
    assert "Use retention_hours >= 168" in message and "force=True" in message
    assert hook.specs == []


def test_vacuum_reads_the_tables_retention_with_deltalake(store_url: str, tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "events")
    write_deltalake(
        path,
        pa.table({"id": [1, 2]}),
        configuration={"delta.deletedFileRetentionDuration": "interval 10 days"},
    )
    op, _hook = _vacuum(store_url, table=path, retention_hours=200)
    with pytest.raises(DeltaCCInputError, match=r"retention of 240 h \(delta.deletedFileRetentionDuration\)"):
        op.execute(_maint_context("vacuum"))
    ok, ok_hook = _vacuum(store_url, table=path, retention_hours=240)
    ok.execute(_maint_context("vacuum"))
    assert ok_hook.specs[0]["options"]["retention_hours"] == 240


def test_vacuum_refuses_retention_below_the_oldest_lease(store_url: str, tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    path = str(tmp_path / "events")
    write_deltalake(
        path, pa.table({"id": [1]}), configuration={"delta.deletedFileRetentionDuration": "interval 1 hours"}
    )
    three_hours_ago = datetime.now(UTC) - timedelta(hours=3)
    with SqliteLeaseStore(tmp_path / "leases.db", clock=lambda: three_hours_ago) as old:
        grant(old, path, OpKind.MERGE, ttl_s=6 * 3600, holder="ingest.backfill/manual__1")
    op, hook = _vacuum(store_url, table=path, retention_hours=2)
    with pytest.raises(DeltaCCInputError, match="shorter than the age of the oldest active lease") as refused:
        op.execute(_maint_context("vacuum"))
    assert "MERGE lease on the whole table by ingest.backfill/manual__1" in str(refused.value)
    assert hook.specs == []


def test_force_needs_the_explicit_flag(store_url: str) -> None:
    op, _hook = _vacuum(store_url, retention_hours=0, force="yes")
    with pytest.raises(DeltaCCInputError, match=r"options\.force='yes': must be true or false"):
        op.execute(_maint_context("vacuum"))
    forced, hook = _vacuum(store_url, retention_hours=0, force=True)
    forced.execute(_maint_context("vacuum"))
    assert hook.specs[0]["options"] == {"force": True, "dry_run": False, "retention_hours": 0}
    [[lease]] = hook.active_during
    assert lease.op_kind is OpKind.VACUUM


def test_forced_vacuum_still_waits_for_writers(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.BLIND_APPEND)
    op, _hook = _vacuum(store_url, retention_hours=0, force=True)
    with pytest.raises(TaskDeferred):
        op.execute(_maint_context("vacuum"))


def test_bad_gate_arguments_are_input_errors(store_url: str) -> None:
    op, _hook = _optimize(store_url, profile="spark_magic")
    with pytest.raises(DeltaCCInputError, match="profile='spark_magic' is not an engine profile"):
        op.execute(_maint_context("optimize"))
    bad_window, _ = _optimize(store_url, write_windows=[{"table": TABLE, "cron": "0 2 * * *"}])
    with pytest.raises(DeltaCCInputError, match="duration"):
        bad_window.execute(_maint_context("optimize"))


# -- DeltaWriteWindowSensor ---------------------------------------------------------------------------


def test_sensor_returns_the_decision_when_quiet(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.BLIND_APPEND)
    sensor = DeltaWriteWindowSensor(task_id="quiet", table=TABLE, lease_store_url=store_url, deferrable=True)
    decision = sensor.execute(_maint_context("quiet"))
    assert decision["go"] is True


def test_sensor_defers_while_busy_and_completes_on_go(store_url: str) -> None:
    with store_from_url(store_url) as store:
        lease = grant(store, TABLE, OpKind.MERGE)
        sensor = DeltaWriteWindowSensor(
            task_id="quiet",
            table=TABLE,
            maintenance_op="vacuum",
            lease_store_url=store_url,
            poke_interval=0.1,
            deferrable=True,
        )
        with pytest.raises(TaskDeferred) as deferred:
            sensor.execute(_maint_context("quiet"))
        assert isinstance(deferred.value.trigger, DeltaGateTrigger)
        assert deferred.value.trigger.poll_interval == 0.1  # the sensor's poke_interval
        threading.Timer(0.2, store.release, args=(lease.lease_id,)).start()
        event = asyncio.run(first_event(deferred.value.trigger, 10))
    assert sensor.execute_complete(_maint_context("quiet"), event=event)["go"] is True
    with pytest.raises(AirflowException, match="boom"):
        sensor.execute_complete(_maint_context("quiet"), event={"status": "error", "message": "boom"})


def test_sensor_pokes_when_not_deferrable(store_url: str) -> None:
    with store_from_url(store_url) as store:
        lease = grant(store, TABLE, OpKind.MERGE, [D20])
        sensor = DeltaWriteWindowSensor(
            task_id="quiet",
            table=TABLE,
            partition_values=[D20],
            table_traits={"partitioned": True},
            lease_store_url=store_url,
            deferrable=False,
        )
        assert sensor.poke(_maint_context("quiet")).is_done is False
        other = DeltaWriteWindowSensor(
            task_id="q2",
            table=TABLE,
            partition_values=[D19],
            table_traits={"partitioned": True},
            lease_store_url=store_url,
        )
        assert other.poke(_maint_context("q2")).is_done is True
        store.release(lease.lease_id)
        assert sensor.poke(_maint_context("quiet")).is_done is True


def test_windows_accept_objects_and_dicts() -> None:
    window = WriteWindow(table=TABLE, cron="0 2 * * *", duration=timedelta(hours=1))
    request = GateRequest(TABLE, "vacuum", windows=(window, window.to_dict()))  # type: ignore[arg-type]
    assert request.windows == (window, window)
