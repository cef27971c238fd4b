"""Leases survive crashes: heartbeats keep a lease past its TTL; SIGKILL lets it expire; on both backends."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from datetime import timedelta

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import decide_gate
from airflow_provider_deltacc.leases import LeaseRequest, maintenance_conflicts, store_from_url
from tests.integration.leases import workers

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

# A TTL of twelve heartbeats: a loaded machine may stall the holder's heartbeats a while without it expiring.
TTL_S = 3.0
HEARTBEAT_S = 0.25


def test_heartbeats_renew_and_a_killed_holders_lease_expires(store_url: str) -> None:
    table = f"ttl-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=workers.hold_until_killed, args=(store_url, table, TTL_S, HEARTBEAT_S, ready))
    holder.start()
    with store_from_url(store_url) as store:
        try:
            assert ready.wait(timeout=60), "the holder never acquired its lease"
            [lease] = store.active(table)
            # Heartbeats keep it alive past its TTL: watched until one lands after the TTL, active throughout.
            deadline = time.monotonic() + TTL_S + 30
            while True:
                [renewed] = store.active(table)
                assert renewed.lease_id == lease.lease_id
                if renewed.heartbeat_at > lease.acquired_at + timedelta(seconds=TTL_S):
                    break
                assert time.monotonic() < deadline, "no heartbeat renewed the lease past its TTL"
                time.sleep(0.1)
            gate = decide_gate(table, OpKind.OPTIMIZE, store=store)
            assert not gate.go and gate.reason.startswith(
                "waiting: MERGE lease on the whole table by victim.merge"
            )

            assert holder.pid is not None
            os.kill(holder.pid, signal.SIGKILL)
            holder.join(timeout=10)
            assert holder.exitcode == -signal.SIGKILL
            killed_at = store.now()

            deadline = time.monotonic() + TTL_S + 30
            while store.active(table) and time.monotonic() < deadline:
                time.sleep(0.05)
            expired_at = store.now()
            assert store.active(table) == [], "the dead holder's lease never expired"
            assert expired_at - killed_at <= timedelta(seconds=TTL_S + 5)

            [record] = store.history(table)
            assert record.lease_id == lease.lease_id and record.released_at is None  # expired, not released
            assert record.end_time(expired_at) == record.expires_at
            assert store.heartbeat(lease.lease_id) is False  # an expired lease cannot be revived

            assert decide_gate(table, OpKind.OPTIMIZE, store=store).go
            request = LeaseRequest(table, "maint.optimize", OpKind.OPTIMIZE)
            assert store.try_acquire(request, maintenance_conflicts(OpKind.OPTIMIZE)).acquired
        finally:
            if holder.is_alive():
                holder.kill()
                holder.join(timeout=10)
