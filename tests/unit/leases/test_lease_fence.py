"""A lease that keeps the data safe stops its writer when it lapses: the fence before each commit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.exceptions import LeaseLapsedError
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import LeaseRequest, SqliteLeaseStore, hold_lease
from airflow_provider_deltacc.leases.conflicts import any_lease
from airflow_provider_deltacc.leases.fence import LeaseFence

pytestmark = pytest.mark.unit


class Turns:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def first(self) -> float | None:
        self.asked.append("first")
        return 1.5

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        self.asked.append(f"retry {conflict_kind} {attempt}")
        return 0.0


def test_a_renewed_lease_lets_the_writer_commit_and_its_turns_go_on(tmp_path: Path) -> None:
    with SqliteLeaseStore(tmp_path / "leases.db") as store:
        request = LeaseRequest(
            table="s3a://lake/t", holder="dag.w/run", op_kind=OpKind.BLIND_APPEND, ttl_s=2.0
        )
        # Twenty heartbeats a TTL: a loaded box may hold the heartbeat's thread back for a few of them.
        with hold_lease(store, request, conflicts=any_lease, wait_timeout_s=0, heartbeat_s=0.1) as held:
            turns = Turns()
            fence = LeaseFence(held, turns)
            time.sleep(2.4)  # longer than the TTL: the heartbeat renewed it meanwhile
            assert held.lapsed() is None
            assert fence.first() == 1.5 and fence.retry("APPEND", 1) == 0.0
            fence.before_commit()
    assert turns.asked == ["first", "retry APPEND 1"]


def test_a_lease_not_renewed_for_its_ttl_stops_the_writer_before_its_commit(tmp_path: Path) -> None:
    with SqliteLeaseStore(tmp_path / "leases.db") as store:
        request = LeaseRequest(table="s3a://lake/t", holder="dag.w/run", op_kind=OpKind.MERGE, ttl_s=30.0)
        # A heartbeat interval longer than the test: nothing renews the lease, as when the store is down.
        with hold_lease(store, request, conflicts=any_lease, wait_timeout_s=0, heartbeat_s=29.0) as held:
            turns = Turns()
            fence = LeaseFence(held, turns)
            assert held.lease is not None
            assert held.lapsed(now=held.renewed_at + 29.9) is None
            held.renewed_at -= 31.0  # the store has not answered for 31 s
            with pytest.raises(LeaseLapsedError) as raised:
                fence.before_commit()
            with pytest.raises(LeaseLapsedError):
                fence.retry("APPEND", 1)
    message = str(raised.value)
    assert "s3://lake/t" in message and held.lease.lease_id in message and "TTL 30 s" in message
    assert "not renewed it for 31 s" in message and "nothing was committed" in message
    assert raised.value.unreachable.startswith("the lease store (lease ")
    assert turns.asked == []  # no turn is taken by a writer whose lease lapsed
