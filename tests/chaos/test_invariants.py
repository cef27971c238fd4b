"""The invariant checker fails on what it must catch: tables written with delta-rs alone (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from tests.chaos.workload import ChaosConfig, Transfer, check_invariants, initial_accounts, plan

pytestmark = [pytest.mark.unit, pytest.mark.chaos]

CFG = ChaosConfig(
    branches=2, accounts_per_branch=3, transfers=6, faults=0, process_kills=0, lease_kills=0, opens=0
)


def _write(
    tmp_path: Path, transfers: list[Transfer], applied: dict[str, int], logged: dict[str, int]
) -> tuple[str, str]:
    """Accounts with each transfer applied ``applied[id]`` times, a log with it ``logged[id]`` times."""
    balances = {account: (branch, balance) for branch, account, balance in initial_accounts(CFG)}
    for t in transfers:
        for _ in range(applied.get(t.id, 1)):
            branch, balance = balances[t.src]
            balances[t.src] = (branch, balance - t.amount)
            branch, balance = balances[t.dst]
            balances[t.dst] = (branch, balance + t.amount)
    accounts, log_table = str(tmp_path / "accounts"), str(tmp_path / "transfer_log")
    rows = [{"branch": b, "account": a, "balance": v} for a, (b, v) in balances.items()]
    write_deltalake(accounts, pa.Table.from_pylist(rows), partition_by=["branch"])
    entries = [
        {"transfer_id": t.id, "src": t.src, "dst": t.dst, "amount": t.amount}
        for t in transfers
        for _ in range(logged.get(t.id, 1))
    ]
    write_deltalake(log_table, pa.Table.from_pylist(entries))
    return accounts, log_table


def _balance_and_log_violations(violations: list[str]) -> list[str]:
    # delta-rs wrote these tables, so there are no MERGE commits, txn identities or ADD COLUMNS to find.
    keep = ("balances differ", "logged more than once", "missing from the log", "total balance", "duplicate")
    return [v for v in violations if any(k in v for k in keep)]


def test_consistent_tables_pass_the_balance_and_log_checks(tmp_path: Path) -> None:
    transfers = plan(CFG)
    violations, _ = check_invariants(*_write(tmp_path, transfers, {}, {}), CFG, transfers)
    assert _balance_and_log_violations(violations) == []
    assert any("MERGE commits" in v for v in violations)  # the history check ran too


def test_a_transfer_applied_twice_is_caught(tmp_path: Path) -> None:
    transfers = plan(CFG)
    violations, _ = check_invariants(*_write(tmp_path, transfers, {"t0003": 2}, {}), CFG, transfers)
    assert [v for v in violations if "balances differ" in v], violations


def test_a_transfer_logged_twice_or_not_at_all_is_caught(tmp_path: Path) -> None:
    transfers = plan(CFG)
    violations, _ = check_invariants(
        *_write(tmp_path, transfers, {}, {"t0001": 2, "t0004": 0}), CFG, transfers
    )
    found = _balance_and_log_violations(violations)
    assert any("logged more than once: ['t0001']" in v for v in found), violations
    assert any("missing from the log: ['t0004']" in v for v in found), violations


def test_a_version_off_total_is_caught_and_later_ones_too(tmp_path: Path) -> None:
    transfers = plan(CFG)
    accounts, log_table = _write(tmp_path, transfers, {}, {})
    # v1 creates money out of nothing; v2 removes it again, so only the history shows it.
    extra = pa.Table.from_pylist([{"branch": "b00", "account": "b00-ghost", "balance": 5}])
    write_deltalake(accounts, extra, mode="append")
    from deltalake import DeltaTable

    DeltaTable(accounts).delete("account = 'b00-ghost'")
    violations, _ = check_invariants(accounts, log_table, CFG, transfers)
    off_total = [v for v in violations if "off-total" in v]
    assert off_total and "v1: total" in off_total[0] and "v2" not in off_total[0], violations
