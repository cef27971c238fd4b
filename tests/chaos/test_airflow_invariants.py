"""The Airflow chaos run's checks fail on what they must catch: tables written with delta-rs alone (no JVM,
no Airflow), each transfer a MERGE committed with the txn identity Airflow gives its task."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from tests.chaos.airflow_faults import FaultPoint
from tests.chaos.airflow_workload import (
    AirflowChaosConfig,
    AirflowChaosResult,
    check_airflow_invariants,
    transfer_app_id,
    write_plan,
)
from tests.chaos.workload import Transfer, initial_accounts

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

CFG = AirflowChaosConfig(transfers=6, mid_merge_kills=1, after_commit_kills=1, branches=2)
RUN_ID = "manual__2026-11-24"


def _accounts(tmp_path: Path, transfers: list[Transfer], times: dict[int, int]) -> str:
    """The accounts table with transfer ``i`` merged ``times.get(i, 1)`` times, each under its identity."""
    table = str(tmp_path / "accounts")
    accounts = [{"branch": b, "account": a, "balance": n} for b, a, n in initial_accounts(CFG.workload())]
    write_deltalake(
        table,
        pa.Table.from_pylist(accounts),
        partition_by=["branch"],
        commit_properties=CommitProperties(app_transactions=[Transaction("chaos/open_accounts", 1)]),
    )
    for index, t in enumerate(transfers):
        legs = pa.Table.from_pylist(
            [
                {"branch": t.src_branch, "account": t.src, "delta": -t.amount},
                {"branch": t.dst_branch, "account": t.dst, "delta": t.amount},
            ]
        )
        for _ in range(times.get(index, 1)):
            properties = CommitProperties(app_transactions=[Transaction(transfer_app_id(index, RUN_ID), 1)])
            DeltaTable(table).merge(
                legs,
                "t.branch = s.branch AND t.account = s.account",
                source_alias="s",
                target_alias="t",
                commit_properties=properties,
            ).when_matched_update({"balance": "t.balance + s.delta"}).execute()
    return table


def _check(tmp_path: Path, times: dict[int, int]) -> tuple[list[str], AirflowChaosResult]:
    transfers = write_plan(tmp_path / "plan.json", CFG, str(tmp_path / "accounts"), tmp_path / "faults")
    table = _accounts(tmp_path, transfers, times)
    result = AirflowChaosResult(config=CFG)
    return check_airflow_invariants(table, CFG, transfers, RUN_ID, result), result


def test_the_plan_kills_distinct_tasks_at_both_points() -> None:
    faults = CFG.faults()
    assert sorted(faults.values()) == sorted([FaultPoint.MID_MERGE, FaultPoint.AFTER_COMMIT])
    assert all(0 <= index < CFG.transfers for index in faults)


def test_every_transfer_committed_once_passes(tmp_path: Path) -> None:
    violations, result = _check(tmp_path, {})
    assert violations == []
    assert (result.committed, result.lost, result.duplicated) == (CFG.transfers, [], [])


def test_a_transfer_committed_twice_is_caught(tmp_path: Path) -> None:
    violations, result = _check(tmp_path, {2: 2})
    assert result.duplicated == ["t0002"] and result.committed == CFG.transfers - 1
    assert any("committed more than once: ['t0002']" in v for v in violations), violations
    assert any("balances differ" in v for v in violations), violations
    assert any(f"{CFG.transfers} MERGEs expected" in v for v in violations), violations


def test_a_lost_transfer_is_caught(tmp_path: Path) -> None:
    violations, result = _check(tmp_path, {4: 0})
    assert result.lost == ["t0004"]
    assert any("transfers lost" in v for v in violations), violations
    assert any("balances differ" in v for v in violations), violations
