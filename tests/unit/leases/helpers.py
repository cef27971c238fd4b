"""Shared helpers for the write-window tests: a settable clock and lease shortcuts."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import Lease, LeaseRequest, LeaseStore

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


class Watched:
    """Wraps a store; ``called`` is set once its ``method`` has first answered."""

    def __init__(self, store: LeaseStore, method: str) -> None:
        self.store = store
        self.method = method
        self.called = threading.Event()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.store, name)
        if name != self.method:
            return attr

        def watched(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            self.called.set()
            return result

        return watched


def release_after(
    store: LeaseStore, lease_id: str, started: threading.Event, delay_s: float
) -> threading.Thread:
    """Release a lease ``delay_s`` after ``started`` is set (e.g. by a waiter's first look at the store): a
    wait measured from before that look then lasts at least ``delay_s``, however late the waiter starts."""

    def release() -> None:
        if started.wait(30):
            time.sleep(delay_s)
        store.release(lease_id)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    return thread
