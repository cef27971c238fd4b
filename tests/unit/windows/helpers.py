"""Shared helpers for the write-window tests: a settable clock and lease shortcuts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from airflow_provider_deltacc.conflict_matrix import OpKind
from airflow_provider_deltacc.windows import Lease, LeaseRequest, LeaseStore

T0 = datetime(2026, 11, 20, 10, 2, tzinfo=UTC)


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def grant(
    store: LeaseStore,
    table: str,
    op: OpKind,
    partitions: Sequence[dict[str, str]] | None = None,
    *,
    holder: str = "ingest.merge_orders",
    ttl_s: float = 300.0,
) -> Lease:
    """Acquire a lease that nothing blocks, or fail the test."""
    request = LeaseRequest(table, holder, op, list(partitions) if partitions is not None else None, ttl_s)
    result = store.try_acquire(request, lambda _lease: False)
    assert result.lease is not None, result.blocking
    return result.lease
