"""The bounded chaos run: 8 writers, 80 transfers, 24 injected faults; invariants checked with delta-rs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.chaos.workload import ChaosConfig, FaultKind, run_chaos

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow_module(3)]

# 48 branches keep most pairs of the 8 writers apart (each transfer pins one or two branches), so the run
# still contends (retried conflicts, a schema change, OPTIMIZE) without spending most of its time on
# retries. Every fault kind and count stays; 80 transfers (200, then 120 before) leave fewer fault-free
# transfers between them, to keep the suite in its budget (bench/chaos.py runs longer ones). The run
# abandons itself (a violation) after timeout_s; pytest's limit is above that.
BOUNDED = ChaosConfig(
    writers=8,
    transfers=80,
    faults=24,
    seed=7,
    branches=48,
    accounts_per_branch=3,
    process_kills=2,
    timeout_s=1200.0,
)


@pytest.mark.timeout(1500)
def test_bank_transfers_survive_faults_exactly_once(spark: SparkSession, tmp_path: Path) -> None:
    result = run_chaos(spark, tmp_path, BOUNDED)
    report = "\n".join(result.lines())
    print(report)

    assert result.violations == [], report
    assert result.transfers == BOUNDED.transfers
    assert sum(result.faults.values()) == BOUNDED.faults >= 20
    assert set(result.faults) == {kind.value for kind in FaultKind}
    # Real process deaths: Spark drivers killed after their commit and inside their write, lease holders.
    assert result.fault_detail["process_after_merge"] >= 1 and result.fault_detail["process_mid_write"] >= 1
    # Every ambiguous commit was found in the log by its identity and skipped, not applied again.
    assert result.skipped_duplicates >= result.faults[FaultKind.AFTER_COMMIT]
    # A victim re-ran its MERGE only after a classified conflict (never bad input, never an unnamed failure).
    assert all(reason.startswith("conflict:") for reason in result.victim_reruns), report
    # The writers really contended: the commit loop classified and retried conflicts.
    assert result.retries > 0 and sum(result.conflicts.values()) > 0
    assert len(result.lease_waits_s) == BOUNDED.lease_kills
