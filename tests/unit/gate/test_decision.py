"""The maintenance gate on a real (SQLite) lease store with a fixed clock."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import GateDecision, WriteWindow, decide_gate
from airflow_provider_deltacc.leases import (
    LeaseRequest,
    SqliteLeaseStore,
    maintenance_conflicts,
    maintenance_lease_conflicts,
)
from tests.unit.leases.helpers import T0, FakeClock, grant

pytestmark = pytest.mark.unit

TABLE = "sales.orders"
PARTITIONED = TableTraits(partitioned=True)
D18, D19, D20 = {"date": "2026-11-18"}, {"date": "2026-11-19"}, {"date": "2026-11-20"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[SqliteLeaseStore]:
    with SqliteLeaseStore(tmp_path / "leases.db", clock=clock) as opened:
        yield opened


def test_optimize_waits_for_a_merge_on_its_partition(
    store: SqliteLeaseStore, caplog: pytest.LogCaptureFixture
) -> None:
    lease = grant(store, TABLE, OpKind.MERGE, [D20])
    with caplog.at_level(logging.INFO, logger="airflow_provider_deltacc.gate.decision"):
        decision = decide_gate(TABLE, OpKind.OPTIMIZE, store=store, traits=PARTITIONED, partitions=None)
    text = "MERGE lease on date=2026-11-20 by ingest.merge_orders since 10:02 (expires 10:07)"
    assert decision == GateDecision(
        go=False, wait_until=lease.expires_at, reason=f"waiting: {text}", blocking=[text], decided_at=T0
    )
    assert f"gate: OPTIMIZE on {TABLE}: waiting: {text}" in caplog.messages


def test_optimize_of_another_partition_does_not_wait(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE, [D20])
    decision = decide_gate(TABLE, "optimize", store=store, traits=PARTITIONED, partitions=[D19])
    assert decision.go and decision.closed_partitions == [D19]
    assert decision.reason.startswith(
        "go: nothing active on sales.orders conflicts with OPTIMIZE on date=2026-11-19"
    )


def test_optimize_never_waits_for_blind_appends(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.BLIND_APPEND, holder="ingest.append_a")
    grant(store, TABLE, OpKind.BLIND_APPEND, [D20], holder="ingest.append_b")
    decision = decide_gate(TABLE, OpKind.OPTIMIZE_ZORDER, store=store)
    assert decision.go and decision.blocking == []
    assert decision.reason.startswith("go: nothing active on sales.orders conflicts with OPTIMIZE_ZORDER")
    assert "BLIND_APPEND lease on the whole table by ingest.append_a" in decision.reason


def test_optimize_scoped_to_closed_partitions(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE, [D20])
    grant(store, TABLE, OpKind.UPDATE, [D18], holder="fix.update_orders")
    decision = decide_gate(
        TABLE, OpKind.OPTIMIZE, store=store, traits=PARTITIONED, partitions=[D18, D19, D20]
    )
    assert decision.go
    assert decision.closed_partitions == [D19]
    assert decision.reason.startswith(
        "go: OPTIMIZE on the closed partitions date=2026-11-19; "
        "skipping date=2026-11-18, date=2026-11-20 for "
    )
    assert len(decision.blocking) == 2

    everything_busy = decide_gate(
        TABLE, OpKind.OPTIMIZE, store=store, traits=PARTITIONED, partitions=[D18, D20]
    )
    assert not everything_busy.go and everything_busy.closed_partitions == []


def test_expired_and_released_leases_do_not_block(store: SqliteLeaseStore, clock: FakeClock) -> None:
    grant(store, TABLE, OpKind.MERGE, ttl_s=60)
    released = grant(store, TABLE, OpKind.DELETE)
    store.release(released.lease_id)
    assert not decide_gate(TABLE, OpKind.OPTIMIZE, store=store).go
    clock.advance(60)
    assert decide_gate(TABLE, OpKind.OPTIMIZE, store=store).go


def test_leases_on_other_tables_are_ignored(store: SqliteLeaseStore) -> None:
    grant(store, "sales.returns", OpKind.MERGE)
    assert decide_gate(TABLE, OpKind.VACUUM, store=store).go


def test_an_active_optimize_blocks_another(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.OPTIMIZE, holder="maint.optimize/run1")
    decision = decide_gate(TABLE, OpKind.OPTIMIZE, store=store)
    assert decision.reason == (
        "waiting: OPTIMIZE lease on the whole table by maint.optimize/run1 since 10:02 (expires 10:07)"
    )


def test_profile_and_traits_come_from_the_matrix(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE)
    dv = TableTraits(deletion_vectors=True)
    databricks = decide_gate(
        TABLE, OpKind.OPTIMIZE, store=store, profile=EngineProfile.DATABRICKS_WRITE_SERIALIZABLE, traits=dv
    )
    assert databricks.go  # Databricks: a plain OPTIMIZE with deletion vectors never conflicts
    assert not decide_gate(TABLE, OpKind.OPTIMIZE, store=store, traits=dv).go  # OSS: it can


def test_vacuum_waits_for_every_writer(store: SqliteLeaseStore) -> None:
    append = grant(store, TABLE, OpKind.BLIND_APPEND, [D20], holder="ingest.append", ttl_s=600)
    grant(store, TABLE, OpKind.MERGE, [D19])
    decision = decide_gate(TABLE, OpKind.VACUUM, store=store, traits=PARTITIONED)
    assert not decision.go and not decision.refused
    assert len(decision.blocking) == 2
    assert decision.wait_until == append.expires_at  # the latest end among the blockers


def test_vacuum_refuses_retention_below_the_table_retention(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE)
    decision = decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=24, table_retention_hours=72)
    assert decision.refused and not decision.go and decision.wait_until is None
    assert decision.reason.startswith(
        "refused: VACUUM retention 24 h is shorter than the table's retention of 72 h "
        "(delta.deletedFileRetentionDuration)"
    )
    assert "Use retention_hours >= 72" in decision.reason and "force=True" in decision.reason
    default = decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=100)
    assert default.refused and "retention of 168 h (Delta's default" in default.reason


def test_vacuum_refuses_retention_below_the_oldest_lease_age(
    store: SqliteLeaseStore, clock: FakeClock
) -> None:
    lease = grant(store, TABLE, OpKind.MERGE, [D20], holder="backfill.merge", ttl_s=600)
    for _ in range(20):  # alive for 3 h by heartbeats
        clock.advance(540)
        assert store.heartbeat(lease.lease_id)
    decision = decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=2, table_retention_hours=0)
    assert decision.refused
    assert decision.reason.startswith(
        "refused: VACUUM retention 2 h is shorter than the age of the oldest active lease, MERGE lease on "
        "date=2026-11-20 by backfill.merge since 10:02 (3.0 h)"
    )
    assert "Use retention_hours >= 3" in decision.reason
    assert not decide_gate(
        TABLE, OpKind.VACUUM, store=store, retention_hours=4, table_retention_hours=0
    ).refused


def test_force_skips_the_refusal_but_still_waits_for_writers(store: SqliteLeaseStore) -> None:
    lease = grant(store, TABLE, OpKind.BLIND_APPEND)
    forced = decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=0, force=True)
    assert not forced.refused and not forced.go and forced.reason.startswith("waiting: BLIND_APPEND lease")
    store.release(lease.lease_id)
    forced_go = decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=0, force=True)
    assert forced_go.go and "[force=True overrides: VACUUM retention 0 h is shorter" in forced_go.reason
    assert decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=168).go


def test_windows_block_only_when_they_can_conflict(store: SqliteLeaseStore) -> None:
    merge = WriteWindow(TABLE, cron="0 10 * * *", duration=timedelta(hours=1), partition_values=[D20])
    append = WriteWindow(TABLE, cron="0 10 * * *", duration=timedelta(hours=2), op_kind=OpKind.BLIND_APPEND)
    other = WriteWindow("sales.returns", cron="0 10 * * *", duration=timedelta(hours=3))
    windows = [merge, append, other]

    decision = decide_gate(TABLE, OpKind.OPTIMIZE, store=store, windows=windows, traits=PARTITIONED)
    assert not decision.go
    assert decision.reason == (
        "waiting: MERGE window on date=2026-11-20 ('0 10 * * *' UTC, 1:00:00) until 11:00"
    )
    assert decision.wait_until == T0.replace(hour=11, minute=0)
    assert decide_gate(
        TABLE, OpKind.OPTIMIZE, store=store, windows=windows, traits=PARTITIONED, partitions=[D19]
    ).go

    vacuum = decide_gate(TABLE, OpKind.VACUUM, store=store, windows=windows)
    assert len(vacuum.blocking) == 2 and vacuum.wait_until == T0.replace(hour=12, minute=0)


def test_expected_duration_keeps_maintenance_out_of_a_window_about_to_open(store: SqliteLeaseStore) -> None:
    window = WriteWindow(TABLE, cron="30 10 * * *", duration=timedelta(minutes=30))
    assert decide_gate(TABLE, OpKind.OPTIMIZE, store=store, windows=[window]).go
    soon = decide_gate(
        TABLE, OpKind.OPTIMIZE, store=store, windows=[window], expected_duration=timedelta(hours=1)
    )
    assert (
        soon.reason == "waiting: MERGE window on the whole table ('30 10 * * *' UTC, 0:30:00) "
        "opens at 10:30 (until 11:00)"
    )
    later = decide_gate(
        TABLE, OpKind.OPTIMIZE, store=store, windows=[window], expected_duration=timedelta(minutes=20)
    )
    assert later.go


def test_writers_wait_only_for_conflicting_maintenance_leases(store: SqliteLeaseStore) -> None:
    optimize = grant(store, TABLE, OpKind.OPTIMIZE, [D20], holder="maint.optimize")
    grant(store, TABLE, OpKind.MERGE, [D19], holder="other.merge")

    def blocked(op: OpKind, partitions: list[dict[str, str]] | None) -> list[str]:
        request = LeaseRequest(TABLE, "writer", op, partitions)
        predicate = maintenance_lease_conflicts(op, partitions, traits=PARTITIONED)
        result = store.try_acquire(request, predicate)
        if result.lease is not None:
            store.release(result.lease.lease_id)
        return [lease.holder for lease in result.blocking]

    assert blocked(OpKind.MERGE, [D20]) == ["maint.optimize"]
    assert blocked(OpKind.MERGE, [D19]) == []  # other partition; other writers never block writers
    assert blocked(OpKind.BLIND_APPEND, [D20]) == []  # compaction cannot fail a blind append
    store.release(optimize.lease_id)
    grant(store, TABLE, OpKind.VACUUM, holder="maint.vacuum")
    assert blocked(OpKind.BLIND_APPEND, [D18]) == ["maint.vacuum"]


def test_writer_and_maintenance_acquisitions_are_ordered(store: SqliteLeaseStore) -> None:
    optimize = LeaseRequest(TABLE, "maint.optimize", OpKind.OPTIMIZE)
    merge = LeaseRequest(TABLE, "ingest.merge", OpKind.MERGE)
    as_maintenance = maintenance_conflicts(OpKind.OPTIMIZE)
    as_writer = maintenance_lease_conflicts(OpKind.MERGE)

    first = store.try_acquire(merge, as_writer)
    assert first.acquired
    assert [lease.holder for lease in store.try_acquire(optimize, as_maintenance).blocking] == [
        "ingest.merge"
    ]
    assert first.lease is not None and store.release(first.lease.lease_id)

    won = store.try_acquire(optimize, as_maintenance)
    assert won.acquired
    assert [lease.holder for lease in store.try_acquire(merge, as_writer).blocking] == ["maint.optimize"]
    assert not store.try_acquire(optimize, as_maintenance).acquired  # two maintenance runs cannot both win


def test_decision_round_trips_through_a_dict(store: SqliteLeaseStore) -> None:
    grant(store, TABLE, OpKind.MERGE, [D20])
    decision = decide_gate(TABLE, OpKind.OPTIMIZE, store=store, traits=PARTITIONED, partitions=[D19, D20])
    assert GateDecision.from_dict(decision.to_dict()) == decision


def test_bad_requests_are_refused_with_the_fix(store: SqliteLeaseStore) -> None:
    with pytest.raises(ValueError, match="maintenance_op=MERGE is not maintenance; the gate decides for"):
        decide_gate(TABLE, OpKind.MERGE, store=store)
    with pytest.raises(ValueError, match="VACUUM always covers the whole table; pass None"):
        decide_gate(TABLE, OpKind.VACUUM, store=store, partitions=[D20])
    with pytest.raises(ValueError, match="retention_hours=-1 must be a non-negative number of hours"):
        decide_gate(TABLE, OpKind.VACUUM, store=store, retention_hours=-1)
    with pytest.raises(ValueError, match=r"now=.* has no timezone"):
        decide_gate(TABLE, OpKind.VACUUM, store=store, now=T0.replace(tzinfo=None))


def test_on_a_clustered_table_partition_scopes_keep_nothing_apart(store: SqliteLeaseStore) -> None:
    """A clustered table has no partitions: a MERGE lease blocks OPTIMIZE whatever partitions they name."""
    grant(store, TABLE, OpKind.MERGE, [D20])
    clustered = TableTraits(clustered=True)
    assert not decide_gate(TABLE, OpKind.OPTIMIZE, store=store, traits=clustered, partitions=[D19]).go
    assert decide_gate(TABLE, OpKind.OPTIMIZE, store=store, traits=PARTITIONED, partitions=[D19]).go
