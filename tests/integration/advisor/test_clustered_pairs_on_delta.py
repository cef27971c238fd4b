"""The conflict matrix's clustered-table verdicts (OSS) against two real writers on a clustered Delta table.

Each pair runs on a fresh ``CLUSTER BY (k)`` table (:mod:`tests.support.clustered_pairs`): the held writer
reads its snapshot and blocks at a gate, the rival commits, the held one is released, with Delta's own commit
retry only. Where the matrix says the held writer *will* lose, it must fail with one of the verdict's
exceptions; where it says *never*, it must commit. Every pair tested is one the matrix decides (no "can").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_deltacc.conflict_matrix import Level, TableTraits, can_conflict
from tests.support.clustered_pairs import WRITERS, run_pair

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(1)]

#: (held, rival): every cell of the clustered OSS table a held writer can show, once or twice.
PAIRS = [
    ("append", "append"),
    ("append", "merge_on_k"),
    ("append", "optimize"),
    ("append", "cluster_by"),
    ("merge_on_k", "append"),
    ("merge_on_k", "update_on_other_k"),
    ("update_on_k", "update_on_other_k"),
    ("delete_on_k", "delete_on_other_k"),
    ("merge", "optimize"),
    ("delete_on_k", "optimize_full"),
    ("update", "merge_on_k"),
    ("update_on_k", "cluster_by"),
    ("merge_on_k", "cluster_by"),
]
CLUSTERED = TableTraits(clustered=True)


@pytest.mark.parametrize(("held", "rival"), PAIRS, ids=[f"{h}-held-vs-{r}" for h, r in PAIRS])
def test_the_clustered_verdict_matches_two_real_writers(
    spark: SparkSession, tmp_path: Path, held: str, rival: str
) -> None:
    verdict = can_conflict(WRITERS[held].kind, WRITERS[rival].kind, traits=CLUSTERED)
    assert verdict.level is not Level.CAN, f"the matrix leaves {held} x {rival} undecided: {verdict.reason}"
    loses = verdict.level is Level.WILL and WRITERS[held].kind in verdict.losers

    outcome = run_pair(spark, tmp_path, held, rival)

    assert outcome.rival_committed
    if loses:
        assert outcome.held_conflict is not None, f"predicted will, but {held} committed: {verdict.reason}"
        assert outcome.held_conflict in verdict.exceptions, (outcome, verdict.exceptions)
    else:
        assert outcome.held_conflict is None, f"predicted never, but {held} failed: {outcome.held_error}"
