"""hold_lease: bounded wait, heartbeats while the block runs, release on exit, on errors and when lost."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import LeaseRequest, SqliteLeaseStore, hold_lease, maintenance_conflicts
from tests.unit.leases.helpers import Watched, grant, release_after

pytestmark = pytest.mark.unit

TABLE = "sales.orders"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteLeaseStore]:
    with SqliteLeaseStore(tmp_path / "leases.db") as opened:
        yield opened


def optimize_request(ttl_s: float = 0.6) -> LeaseRequest:
    return LeaseRequest(TABLE, "maint.optimize", OpKind.OPTIMIZE, ttl_s=ttl_s)


def test_heartbeats_keep_the_lease_past_its_ttl_and_exit_releases_it(store: SqliteLeaseStore) -> None:
    # A TTL of ten heartbeats: a loaded machine may delay a few of them without the lease expiring.
    with hold_lease(
        store, optimize_request(ttl_s=2), conflicts=lambda _l: False, wait_timeout_s=0, heartbeat_s=0.2
    ) as held:
        assert held.acquired and held.lease is not None
        time.sleep(2.5)  # past the 2 s TTL
        [active] = store.active(TABLE)
        assert active.lease_id == held.lease.lease_id
        assert active.heartbeat_at > held.lease.acquired_at
        assert not held.lost
    [record] = store.history(TABLE)
    assert record.released_at is not None and store.active(TABLE) == []


def test_release_on_exception(store: SqliteLeaseStore) -> None:
    with (
        pytest.raises(RuntimeError, match="boom"),
        hold_lease(store, optimize_request(), conflicts=lambda _l: False, wait_timeout_s=0),
    ):
        raise RuntimeError("boom")
    assert store.active(TABLE) == []
    assert store.history(TABLE)[0].released_at is not None


def test_waits_until_the_blocker_is_released(store: SqliteLeaseStore) -> None:
    blocker = grant(store, TABLE, OpKind.MERGE)
    watched = Watched(store, "try_acquire")
    # Counted from the first (refused) attempt, so the wait lasts at least 0.3 s however late that is.
    releaser = release_after(store, blocker.lease_id, watched.called, 0.3)
    with hold_lease(
        watched,  # type: ignore[arg-type]
        optimize_request(ttl_s=5),
        conflicts=maintenance_conflicts(OpKind.OPTIMIZE),
        wait_timeout_s=60,
        poll_s=0.05,
    ) as held:
        assert held.acquired and held.lease is not None
        assert 0.25 <= held.waited_s < 30
    releaser.join(timeout=30)
    released = {lease.lease_id: lease for lease in store.history(TABLE)}[blocker.lease_id].released_at
    assert released is not None and held.lease.acquired_at >= released


def test_bounded_wait_reports_the_timeout_and_runs_the_body_without_a_lease(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE, holder="ingest.merge_orders")
    ran = False
    with hold_lease(
        store,
        optimize_request(),
        conflicts=maintenance_conflicts(OpKind.OPTIMIZE),
        wait_timeout_s=0.2,
        poll_s=0.05,
    ) as held:
        ran = True
        assert not held.acquired and held.lease is None
        assert [lease.holder for lease in held.blocking] == ["ingest.merge_orders"]
        assert held.waited_s >= 0.2
    assert ran
    assert [lease.op_kind for lease in store.history(TABLE)] == [OpKind.MERGE]


def test_a_lease_ended_behind_the_holders_back_is_reported_lost(store: SqliteLeaseStore) -> None:
    with hold_lease(
        store, optimize_request(), conflicts=lambda _l: False, wait_timeout_s=0, heartbeat_s=0.05
    ) as held:
        assert held.lease is not None
        store.release(held.lease.lease_id)
        deadline = time.monotonic() + 30
        while not held.lost and time.monotonic() < deadline:
            time.sleep(0.02)
        assert held.lost


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"heartbeat_s": 0.6}, "heartbeat_s=0.6 must be positive and shorter than ttl_s=0.6"),
        ({"wait_timeout_s": -1}, "wait_timeout_s=-1 must be >= 0"),
        ({"poll_s": 0}, "poll_s=0 > 0"),
    ],
)
def test_bad_timings_are_refused(store: SqliteLeaseStore, kwargs: dict[str, float], message: str) -> None:
    options: dict[str, float] = {"wait_timeout_s": 0}
    options.update(kwargs)
    with (
        pytest.raises(ValueError, match=message.replace("(", r"\(")),
        hold_lease(store, optimize_request(), conflicts=lambda _l: False, **options),
    ):
        pass


class _Outage:
    """Wraps a store so that heartbeats and the release fail while ``down`` is set, like a lost server."""

    def __init__(self, store: SqliteLeaseStore) -> None:
        self.store = store
        self.down = threading.Event()
        self.failed_heartbeats = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def heartbeat(self, lease_id: str) -> bool:
        if self.down.is_set():
            self.failed_heartbeats += 1
            raise ConnectionError("the lease store sqlite:///x cannot be reached")
        return self.store.heartbeat(lease_id)

    def release(self, lease_id: str) -> bool:
        if self.down.is_set():
            raise ConnectionError("the lease store sqlite:///x cannot be reached")
        return self.store.release(lease_id)


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert condition()


def test_a_store_outage_is_warned_about_once_and_its_end_is_logged(
    store: SqliteLeaseStore, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = _Outage(store)
    with (
        caplog.at_level(logging.INFO, logger="airflow_provider_deltacc.leases.heartbeat"),
        hold_lease(
            flaky,  # type: ignore[arg-type]
            optimize_request(ttl_s=5),
            conflicts=lambda _l: False,
            wait_timeout_s=0,
            heartbeat_s=0.02,
        ) as held,
    ):
        flaky.down.set()
        _wait_for(lambda: flaky.failed_heartbeats >= 5)
        flaky.down.clear()
        _wait_for(lambda: any("renewed again" in m for m in caplog.messages))
        failed = flaky.failed_heartbeats
        flaky.down.set()  # a second outage, still on when the block ends: the release fails too
        _wait_for(lambda: flaky.failed_heartbeats > failed)
    assert held.acquired and not held.lost
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings  # one per outage, none for the release during the second
    assert all("the work goes on" in w and "ends at its TTL (5 s)" in w for w in warnings), warnings
    assert any(r.levelno == logging.INFO and "could not release" in r.getMessage() for r in caplog.records)


def test_the_lease_observer_sees_the_grant_and_the_release_only_where_it_is_set(
    store: SqliteLeaseStore,
) -> None:
    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.contract.table_location import table_key
    from airflow_provider_deltacc.leases.heartbeat import LEASE_OBSERVER

    key = table_key(Table(TABLE))
    seen: list[tuple[str, int]] = []
    # A TTL no stall of a loaded box outlasts: the observer must count the lease as live at its grant.
    request = optimize_request(ttl_s=120)
    with hold_lease(store, request, conflicts=lambda _l: False, wait_timeout_s=0):
        pass  # no observer: a library caller runs nothing extra
    token = LEASE_OBSERVER.set(lambda s, table: seen.append((table, len(s.active(table)))))
    try:
        with hold_lease(store, request, conflicts=lambda _l: False, wait_timeout_s=0):
            assert seen == [(key, 1)]
    finally:
        LEASE_OBSERVER.reset(token)
    assert seen == [(key, 1), (key, 0)]
