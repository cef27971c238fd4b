"""The LeaseStore contract and the gate, on SQLite and a real PostgreSQL server."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta

import pytest

from airflow_provider_deltacc.conflict_matrix import TableTraits
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import WriteWindow, decide_gate
from airflow_provider_deltacc.leases import (
    LeaseRequest,
    LeaseStore,
    PostgresLeaseStore,
    hold_lease,
    maintenance_conflicts,
    store_from_url,
)
from tests.unit.leases.helpers import T0, FakeClock, grant

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

D19, D20 = {"date": "2026-11-19"}, {"date": "2026-11-20"}


@pytest.fixture
def table() -> str:
    return f"contract-{uuid.uuid4().hex[:8]}"


def test_acquire_blocks_on_the_predicate_and_release_ends_the_lease(
    store: LeaseStore, clock: FakeClock, table: str
) -> None:
    merge = grant(store, table, OpKind.MERGE, [D20], ttl_s=60)
    assert merge.acquired_at == T0 and merge.partitions == [D20]
    blocked = store.try_acquire(LeaseRequest(table, "m", OpKind.OPTIMIZE), lambda lease: True)
    assert not blocked.acquired and [lease.lease_id for lease in blocked.blocking] == [merge.lease_id]

    clock.advance(10)
    assert store.release(merge.lease_id) is True
    assert store.release(merge.lease_id) is False
    assert store.heartbeat(merge.lease_id) is False
    assert store.active(table) == []
    assert store.try_acquire(LeaseRequest(table, "m", OpKind.OPTIMIZE), lambda lease: True).acquired

    record = store.get(merge.lease_id)
    assert record is not None and record.released_at == T0 + timedelta(seconds=10)
    assert record.end_time(clock()) == T0 + timedelta(seconds=10)


def test_heartbeat_extends_by_the_ttl_and_expiry_is_final(
    store: LeaseStore, clock: FakeClock, table: str
) -> None:
    lease = grant(store, table, OpKind.UPDATE, ttl_s=60)
    clock.advance(50)
    assert store.heartbeat(lease.lease_id)
    clock.advance(50)  # 100 s after acquisition, 50 s after the heartbeat
    [active] = store.active(table)
    assert active.expires_at == T0 + timedelta(seconds=110)
    clock.advance(10)
    assert store.active(table) == []
    assert store.heartbeat(lease.lease_id) is False
    assert store.active(table, T0 + timedelta(seconds=109)) != []  # judged at an explicit time


def test_history_keeps_every_lease_in_order(store: LeaseStore, clock: FakeClock, table: str) -> None:
    first = grant(store, table, OpKind.MERGE, [D20], ttl_s=30)
    clock.advance(1)
    second = grant(store, table, OpKind.BLIND_APPEND, holder="ingest.append")
    clock.advance(1)
    store.release(second.lease_id)
    clock.advance(60)
    third = grant(store, table, OpKind.OPTIMIZE, holder="maint.optimize")
    grant(store, f"{table}-other", OpKind.MERGE)
    history = store.history(table)
    assert [lease.lease_id for lease in history] == [first.lease_id, second.lease_id, third.lease_id]
    assert [lease.is_active(clock()) for lease in history] == [False, False, True]
    assert history[0].released_at is None and history[1].released_at is not None
    assert history[0].to_dict()["partitions"] == [D20]
    assert store.get("no-such-lease") is None and store.heartbeat("no-such-lease") is False


def test_purge_drops_only_long_ended_leases(store: LeaseStore, clock: FakeClock, table: str) -> None:
    old = grant(store, table, OpKind.MERGE, ttl_s=10)
    released = grant(store, table, OpKind.MERGE)
    store.release(released.lease_id)
    clock.advance(3600)
    live = grant(store, table, OpKind.MERGE, ttl_s=7200)
    assert store.purge(timedelta(minutes=30)) >= 2
    assert [lease.lease_id for lease in store.history(table)] == [live.lease_id]
    assert store.get(old.lease_id) is None


def test_gate_decisions(store: LeaseStore, table: str) -> None:
    grant(store, table, OpKind.MERGE, [D20], holder="ingest.merge_orders")
    grant(store, table, OpKind.BLIND_APPEND, holder="ingest.append")
    traits = TableTraits(partitioned=True)
    waiting = decide_gate(table, OpKind.OPTIMIZE, store=store, traits=traits)
    assert waiting.reason == (
        "waiting: MERGE lease on date=2026-11-20 by ingest.merge_orders since 10:02 (expires 10:07)"
    )
    scoped = decide_gate(table, OpKind.OPTIMIZE, store=store, traits=traits, partitions=[D19, D20])
    assert scoped.go and scoped.closed_partitions == [D19]
    assert len(decide_gate(table, OpKind.VACUUM, store=store).blocking) == 2
    assert decide_gate(table, OpKind.VACUUM, store=store, retention_hours=1).refused
    window = WriteWindow(table, cron="0 10 * * *", duration=timedelta(hours=1), op_kind=OpKind.DELETE)
    with_window = decide_gate(
        table, OpKind.OPTIMIZE, store=store, traits=traits, partitions=[D19], windows=[window]
    )
    assert not with_window.go and with_window.wait_until == T0.replace(hour=11, minute=0)


def test_hold_lease_waits_for_a_release_from_another_thread(store_url: str, table: str) -> None:
    with store_from_url(store_url) as store:
        blocker = grant(store, table, OpKind.MERGE)
        timer = threading.Timer(0.3, store.release, args=(blocker.lease_id,))
        timer.start()
        request = LeaseRequest(table, "maint.optimize", OpKind.OPTIMIZE, ttl_s=5)
        with hold_lease(
            store, request, conflicts=maintenance_conflicts(OpKind.OPTIMIZE), wait_timeout_s=10, poll_s=0.05
        ) as held:
            assert held.acquired and held.waited_s >= 0.25
            assert [lease.op_kind for lease in store.active(table)] == [OpKind.OPTIMIZE]
        assert store.active(table) == []
        timer.cancel()


def test_postgres_url_forms_and_masking(postgres_url: str) -> None:
    plain = postgres_url.replace("postgresql+psycopg2://", "postgres://")
    with store_from_url(plain) as store:
        assert isinstance(store, PostgresLeaseStore)
        assert store.url.drivername == "postgresql+psycopg2"
        password = store.url.password
        assert password and str(password) not in repr(store)
        assert store.now().tzinfo is not None
