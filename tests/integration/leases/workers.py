"""Functions the lease-store tests run in spawned processes (importable, no closures)."""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import (
    LeaseRequest,
    hold_lease,
    maintenance_conflicts,
    maintenance_lease_conflicts,
    store_from_url,
)

#: Processes in a race.
RACERS = 8
#: Leases each racer records on one shared table for the lost-update check.
INSERTS_PER_RACER = 10


def race(url: str, prefix: str, index: int, rounds: int, barrier: Any, results: Any) -> None:
    """Race the other processes for leases, round by round, and report what this one got.

    Even rounds: every process asks for an OPTIMIZE lease on a fresh table (exactly one may win). Odd
    rounds: every fourth process asks for OPTIMIZE, the others for MERGE (a writer and maintenance race).
    Then every process records :data:`INSERTS_PER_RACER` non-conflicting leases on one table and
    heartbeats them (none may be lost).
    """
    store = store_from_url(url)
    try:
        for round_no in range(rounds):
            table = f"{prefix}-round{round_no}"
            maintenance = round_no % 2 == 0 or index % 4 == 0
            op = OpKind.OPTIMIZE if maintenance else OpKind.MERGE
            predicate = maintenance_conflicts(op) if maintenance else maintenance_lease_conflicts(op)
            request = LeaseRequest(table, f"racer{index}", op, ttl_s=300)
            barrier.wait(timeout=60)
            result = store.try_acquire(request, predicate)
            results.put((round_no, index, op.value, result.lease.lease_id if result.lease else None))
        barrier.wait(timeout=60)
        ids = []
        for n in range(INSERTS_PER_RACER):
            request = LeaseRequest(f"{prefix}-shared", f"racer{index}.{n}", OpKind.BLIND_APPEND, ttl_s=300)
            granted = store.try_acquire(request, lambda _lease: False)
            assert granted.lease is not None
            ids.append(granted.lease.lease_id)
        renewed = sum(store.heartbeat(lease_id) for lease_id in ids)
        results.put(("shared", index, renewed, ids))
    finally:
        store.close()


def hold_until_killed(url: str, table: str, ttl_s: float, heartbeat_s: float, ready: Any) -> None:
    """Hold a MERGE lease with heartbeats, signal ``ready``, then sleep until killed."""
    store = store_from_url(url)
    request = LeaseRequest(table, "victim.merge", OpKind.MERGE, ttl_s=ttl_s)
    with hold_lease(
        store, request, conflicts=lambda _lease: False, wait_timeout_s=0, heartbeat_s=heartbeat_s
    ):
        ready.set()
        time.sleep(600)


def serve(index: int, barrier: Any, commands: Any, results: Any) -> None:
    """Run :func:`race` for each ``(url, prefix, rounds)`` command until a None arrives.

    Racers are started once and reused for both backends: spawning and importing SQLAlchemy in 8
    processes costs far more than the race itself.
    """
    while (command := commands.get()) is not None:
        url, prefix, rounds = command
        race(url, prefix, index, rounds, barrier, results)
