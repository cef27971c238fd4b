"""Conflict-aware turns on a real SQLite lease store: a writer waits, before its first attempt, for the
writers granted before it that it will conflict with; after a lost conflict, for those it can conflict with;
writers that cannot conflict never wait; dead holders expire; every wait is bounded; an unreachable store
means no turns."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_deltacc.conflict_matrix import Level
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import Lease, SqliteLeaseStore
from airflow_provider_deltacc.leases.conflicts import writers_pair_level
from airflow_provider_deltacc.turns import LeaseTurns, lease_turns
from tests.unit.leases.helpers import Watched, grant, release_after
from tests.unit.stepped_clock import SteppedClock

pytestmark = pytest.mark.unit

TABLE = "sales.orders"
Scope = list[dict[str, str]] | None
DAY1, DAY2, DAY3 = [{"date": "2026-11-20"}], [{"date": "2026-11-21"}], [{"date": "2026-11-22"}]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteLeaseStore]:
    with SqliteLeaseStore(tmp_path / "leases.db") as opened:
        yield opened


def turns(store: SqliteLeaseStore, lease: Lease, timeout_s: float = 30.0) -> LeaseTurns:
    return LeaseTurns(store, lease, timeout_s=timeout_s)


@pytest.mark.parametrize(
    ("a", "scope_a", "b", "scope_b", "level"),
    [
        (OpKind.MERGE, None, OpKind.MERGE, None, Level.WILL),
        (OpKind.MERGE, None, OpKind.BLIND_APPEND, None, Level.WILL),
        (OpKind.MERGE, DAY1, OpKind.MERGE, DAY1, Level.WILL),
        (OpKind.MERGE, DAY1, OpKind.MERGE, DAY2, Level.NEVER),
        (OpKind.MERGE, DAY1, OpKind.BLIND_APPEND, None, Level.CAN),
        (OpKind.BLIND_APPEND, None, OpKind.BLIND_APPEND, None, Level.NEVER),
        (OpKind.UPDATE, None, OpKind.DELETE, DAY2, Level.WILL),
    ],
)
def test_writer_pairs_that_read_what_the_other_writes_will_conflict(
    a: OpKind,
    scope_a: list[dict[str, str]] | None,
    b: OpKind,
    scope_b: list[dict[str, str]] | None,
    level: Level,
) -> None:
    assert writers_pair_level(a, scope_a, b, scope_b) is level
    assert writers_pair_level(b, scope_b, a, scope_a) is level


def test_writers_that_will_conflict_take_turns_in_the_order_they_were_granted(
    store: SqliteLeaseStore,
) -> None:
    leases = [
        grant(store, TABLE, op, holder=f"w{i}") for i, op in enumerate([OpKind.MERGE, OpKind.UPDATE] * 2)
    ]
    order: list[str] = []
    lock = threading.Lock()

    def writer(lease: Lease) -> None:
        turns(store, lease).first()
        with lock:
            order.append(lease.holder)
        time.sleep(0.15)  # the write
        store.release(lease.lease_id)

    threads = [
        threading.Thread(target=writer, args=(lease,)) for lease in reversed(leases)
    ]  # start last first
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert order == ["w0", "w1", "w2", "w3"]


def test_writers_that_cannot_conflict_never_wait(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE, DAY1, holder="running")
    other_day = grant(store, TABLE, OpKind.MERGE, DAY2, holder="other-day")
    appends = grant(store, TABLE, OpKind.BLIND_APPEND, DAY3, holder="append")
    started = time.monotonic()
    assert turns(store, other_day).first() == 0.0
    assert turns(store, appends).first() == 0.0
    assert time.monotonic() - started < 1.0


def test_a_writer_waits_for_the_one_granted_before_it_and_reports_the_wait(
    store: SqliteLeaseStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_deltacc")  # the wait is an INFO line
    ahead = grant(store, TABLE, OpKind.MERGE, holder="ahead")
    mine = grant(store, TABLE, OpKind.MERGE, holder="mine")
    assert turns(store, ahead).first() == 0.0  # nobody before it
    watched = Watched(store, "active")
    # Released 0.4 s after the writer first found it ahead, however late the writer starts looking.
    releaser = release_after(store, ahead.lease_id, watched.called, 0.4)
    waited = LeaseTurns(watched, mine, timeout_s=30.0).first()  # type: ignore[arg-type]
    releaser.join(timeout=30)
    assert waited is not None and waited >= 0.4
    assert (
        "waits before its first attempt for its turn behind MERGE lease on the whole table by ahead"
        in caplog.text
    )


def test_a_dead_holder_expires_and_the_next_one_goes(store: SqliteLeaseStore) -> None:
    started = time.monotonic()  # before the grant: the TTL runs from it
    grant(store, TABLE, OpKind.MERGE, holder="dead-holder", ttl_s=0.8)
    mine = grant(store, TABLE, OpKind.MERGE, holder="alive")
    turns(store, mine).first()
    assert 0.7 <= time.monotonic() - started < 5


def test_the_wait_is_bounded_and_says_so(store: SqliteLeaseStore, caplog: pytest.LogCaptureFixture) -> None:
    grant(store, TABLE, OpKind.MERGE, holder="slow-writer")
    mine = grant(store, TABLE, OpKind.MERGE, holder="impatient")
    waited = turns(store, mine, timeout_s=0.3).first()
    assert waited is not None and 0.3 <= waited < 3
    assert "goes ahead before its first attempt" in caplog.text and "turn_wait_timeout" in caplog.text
    assert "slow-writer" in caplog.text


def test_a_retry_waits_for_the_writers_granted_before_it_that_can_conflict(store: SqliteLeaseStore) -> None:
    earlier = grant(store, TABLE, OpKind.MERGE, DAY1, holder="earlier")  # can conflict with mine
    grant(store, TABLE, OpKind.BLIND_APPEND, None, holder="appender")  # cannot: not waited for
    mine = grant(store, TABLE, OpKind.BLIND_APPEND, None, holder="mine")
    later = grant(store, TABLE, OpKind.MERGE, DAY1, holder="later")  # granted after: not waited for
    queue = turns(store, mine)
    assert queue.first() == 0.0  # an append will conflict with nobody
    assert [lease.holder for lease in queue.ahead(frozenset({Level.WILL, Level.CAN}))] == ["earlier"]
    watched = Watched(store, "active")
    releaser = release_after(store, earlier.lease_id, watched.called, 0.3)
    waited = LeaseTurns(watched, mine, timeout_s=30.0).retry("APPEND", 1)  # type: ignore[arg-type]
    releaser.join(timeout=30)
    assert waited is not None and waited >= 0.3
    assert queue.retry("APPEND", 2) == 0.0  # nobody ahead any more
    store.release(later.lease_id)


def test_an_unreachable_store_means_no_turns_and_one_warning(
    store: SqliteLeaseStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    mine = grant(store, TABLE, OpKind.MERGE, holder="mine")
    queue = turns(store, mine)

    def broken(*_args: object, **_kwargs: object) -> object:
        raise OSError("gone")

    monkeypatch.setattr(SqliteLeaseStore, "active", broken)
    assert queue.first() is None
    assert queue.retry("APPEND", 1) is None
    assert caplog.text.count("cannot be asked whose turn it is") == 1


def test_a_writer_far_back_in_line_asks_the_store_less_often_than_the_next_in_line(
    store: SqliteLeaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    leases = [grant(store, TABLE, OpKind.MERGE, holder=f"w{i}") for i in range(12)]
    nobody_leaves_s = 2.0
    poll_s = 0.05
    waited: dict[str, float | None] = {}
    pauses: dict[str, list[float]] = {}
    for lease in (leases[1], leases[11]):
        clock = SteppedClock()
        monkeypatch.setattr(lease_turns, "time", clock)
        waited[lease.holder] = LeaseTurns(store, lease, timeout_s=nobody_leaves_s, poll_s=poll_s).first()
        pauses[lease.holder] = clock.sleeps
    # A writer pauses after every look at the store but its last.
    looks = {holder: len(paused) + 1 for holder, paused in pauses.items()}

    # The next in line pauses poll_s between looks; the one with 11 writers ahead up to 11 times as long.
    assert max(pauses["w1"]) == pytest.approx(poll_s)
    assert max(pauses["w11"]) == pytest.approx(11 * poll_s)
    assert looks["w1"] >= 3 * looks["w11"], looks
    # Both waits end at the timeout, however long the pause.
    assert waited == {"w1": pytest.approx(nobody_leaves_s), "w11": pytest.approx(nobody_leaves_s)}
