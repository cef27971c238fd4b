"""DeltaGateTrigger: serialization round trip and its events (go, refused, error), on a real SQLite store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import GateDecision, GateRequest, WriteWindow, poll_delay
from airflow_provider_deltacc.leases import store_from_url
from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger
from tests.unit.maintenance.helpers import first_event, grant

pytestmark = pytest.mark.unit

TABLE = "/data/orders"


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leases.db'}"


def _trigger(store_url: str, request: GateRequest, poll: float = 0.1) -> DeltaGateTrigger:
    return DeltaGateTrigger(request=request.to_dict(), lease_store_url=store_url, poll_interval=poll)


def test_serialize_round_trip(store_url: str) -> None:
    window = WriteWindow(
        table=TABLE, cron="0 2 * * *", duration=timedelta(hours=1), partition_values=[{"d": "1"}]
    )
    request = GateRequest(
        TABLE,
        OpKind.OPTIMIZE,
        windows=(window,),
        profile=EngineProfile.DATABRICKS_WRITE_SERIALIZABLE,
        traits=TableTraits(partitioned=True, deletion_vectors=True),
        partitions=[{"d": "1"}, {"d": "2"}],
        require_all_partitions=False,
        expected_duration_s=600.0,
    )
    trigger = _trigger(store_url, request, poll=7.5)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_provider_deltacc.triggers.gate.DeltaGateTrigger"
    rebuilt = DeltaGateTrigger(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    assert GateRequest.from_dict(kwargs["request"]) == request
    # The kwargs are stored in Airflow's database: plain JSON only.
    import json

    assert json.loads(json.dumps(kwargs)) == kwargs
    assert kwargs["request"]["windows"][0]["partition_values"] == [{"d": "1"}]


def test_go_event_once_the_blocking_lease_is_released(store_url: str) -> None:
    with store_from_url(store_url) as store:
        lease = grant(store, TABLE, OpKind.MERGE)

        async def scenario() -> dict[str, object]:
            trigger = _trigger(store_url, GateRequest(TABLE, OpKind.OPTIMIZE))
            task = asyncio.create_task(first_event(trigger))
            await asyncio.sleep(0.5)
            assert not task.done(), "the trigger fired while a MERGE lease was active"
            await asyncio.to_thread(store.release, lease.lease_id)
            return await asyncio.wait_for(task, 5)

        payload = asyncio.run(scenario())
    assert payload["status"] == "go"
    decision = GateDecision.from_dict(payload["decision"])  # type: ignore[arg-type]
    assert decision.go and decision.reason.startswith(
        f"go: nothing active on {TABLE} conflicts with OPTIMIZE"
    )


def test_blind_appends_do_not_hold_optimize_back(store_url: str) -> None:
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.BLIND_APPEND)
    payload = asyncio.run(first_event(_trigger(store_url, GateRequest(TABLE, OpKind.OPTIMIZE)), 5))
    assert payload["status"] == "go"


def test_go_when_a_declared_window_closes(store_url: str) -> None:
    now = datetime.now(UTC)
    window = WriteWindow(table=TABLE, start=now - timedelta(seconds=5), end=now + timedelta(seconds=0.6))
    request = GateRequest(TABLE, OpKind.VACUUM, windows=(window,))
    payload = asyncio.run(first_event(_trigger(store_url, request, poll=30.0), 10))
    # It slept until the window's end, not for the 30 s poll interval.
    assert payload["status"] == "go"
    assert datetime.now(UTC) >= window.end  # type: ignore[operator]


def test_refused_event_for_an_unsafe_vacuum(store_url: str) -> None:
    request = GateRequest(TABLE, OpKind.VACUUM, retention_hours=1.0, table_retention_hours=168.0)
    payload = asyncio.run(first_event(_trigger(store_url, request), 5))
    assert payload["status"] == "refused"
    reason = payload["decision"]["reason"]  # type: ignore[index]
    assert "VACUUM retention 1 h is shorter than the table's retention of 168 h" in reason
    assert "force=True" in reason


def test_error_event_after_repeated_store_errors() -> None:
    trigger = DeltaGateTrigger(
        request=GateRequest(TABLE, OpKind.OPTIMIZE).to_dict(),
        lease_store_url="postgresql+psycopg2://u:p@127.0.0.1:1/leases",
        poll_interval=0.05,
        max_store_errors=2,
    )
    payload = asyncio.run(first_event(trigger, 20))
    assert payload["status"] == "error" and "OperationalError" in str(payload["message"])


def test_error_event_for_a_bad_request(store_url: str) -> None:
    trigger = DeltaGateTrigger(request={"table": TABLE, "maintenance_op": "merge"}, lease_store_url=store_url)
    payload = asyncio.run(first_event(trigger, 5))
    assert payload["status"] == "error" and "maintenance_op=MERGE is not maintenance" in str(
        payload["message"]
    )


def test_require_all_partitions_waits_until_every_one_is_closed(store_url: str) -> None:
    d19, d20 = {"date": "2026-11-19"}, {"date": "2026-11-20"}
    with store_from_url(store_url) as store:
        grant(store, TABLE, OpKind.MERGE, [d20])
        traits = TableTraits(partitioned=True)
        every = GateRequest(TABLE, OpKind.OPTIMIZE, traits=traits, partitions=[d19, d20]).decide(store)
        closed = GateRequest(
            TABLE, OpKind.OPTIMIZE, traits=traits, partitions=[d19, d20], require_all_partitions=False
        ).decide(store)
    assert not every.go and every.closed_partitions == [d19]
    assert "needs all of date=2026-11-19, date=2026-11-20; date=2026-11-20 still open" in every.reason
    assert closed.go and closed.closed_partitions == [d19]


def test_poll_delay_is_the_sooner_of_wait_until_and_the_interval() -> None:
    now = datetime(2026, 11, 20, 10, 2, tzinfo=UTC)
    soon = GateDecision(False, now + timedelta(seconds=2), "waiting", decided_at=now)
    late = GateDecision(False, now + timedelta(hours=2), "waiting", decided_at=now)
    past = GateDecision(False, now - timedelta(seconds=2), "waiting", decided_at=now)
    assert poll_delay(soon, 30) == 2
    assert poll_delay(late, 30) == 30
    assert poll_delay(past, 30) == 0.05
    assert poll_delay(GateDecision(False, None, "waiting"), 30) == 30
