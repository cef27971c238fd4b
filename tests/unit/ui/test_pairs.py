"""The task pairs that conflict most: the advisor's pairs and fixes when the DAG files parse, else the
pairs read from the reports alone with the conflict's own advice."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.occ.advice import advice_for
from airflow_provider_deltacc.occ.kinds import Conflict
from airflow_provider_deltacc.ui.pairs import conflict_pairs
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]

ORDERS = "/lake/orders"
START = datetime(2026, 11, 20, 9, tzinfo=UTC).timestamp()

#: Two tasks on one table: an unpinned MERGE and a blind append (the advisor predicts they conflict).
DAG_FILE = """
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator

ROWS = {"kind": "rows", "rows": [[1, "2026-11-01", "x"]], "schema": "id INT, date STRING, v STRING"}

with DAG("orders", schedule=None, start_date=datetime(2026, 1, 1)):
    DeltaMergeOperator(task_id="merge", table="/lake/orders", source=ROWS, keys=["id"], partition_pin=None)
    DeltaAppendOperator(task_id="append", table="/lake/orders", source=ROWS)
"""


def _ids(report: dict[str, Any], task_id: str, run_id: str = "run_1") -> dict[str, Any]:
    return {**report, "dag_id": "orders", "task_id": task_id, "run_id": run_id, "map_index": -1}


def _reports(merges: int) -> list[dict[str, Any]]:
    """``append`` committed versions 10, 11, ...; ``merge`` lost one unpinned APPEND conflict to each."""
    reports = []
    for n in range(merges):
        version = 10 + n
        append = final_report((committed_try(ORDERS, started_at=START, version=version), None))
        lost = lost_try(ORDERS, started_at=START, winning_version=version, pinned_columns=())
        merge, _ = retried_then_committed(ORDERS, started_at=START, version=100 + n, lost=lost)
        reports += [_ids(append, "append", f"run_{n}"), _ids(merge, "merge", f"run_{n}")]
    return reports


def test_with_parseable_dag_files_the_pairs_and_fixes_are_the_advisors(tmp_path: Path) -> None:
    (tmp_path / "orders.py").write_text(DAG_FILE)
    pairs = conflict_pairs(_reports(2), dags_folder=str(tmp_path))
    assert len(pairs) == 1
    (pair,) = pairs
    assert pair.source == "advisor"
    assert {pair.loser, pair.winner} == {"orders.merge", "orders.append"}
    assert (pair.table, pair.conflicts, pair.kinds) == (ORDERS, 2, "APPEND x2")
    # The advisor's fix names the task and the operator's own setting, which the reports cannot know.
    assert pair.fix.startswith("pin merge:") and "partition_pin=" in pair.fix


def test_without_dag_files_the_pairs_come_from_the_reports_with_the_conflicts_advice(tmp_path: Path) -> None:
    reports = _reports(3)
    conflict = Conflict.from_dict(reports[1]["tries"][0]["attempts"][0]["conflict"])
    expected = advice_for(conflict, pinned_columns=())
    for folder in (None, str(tmp_path)):  # no folder; a folder without the DAGs
        (pair,) = conflict_pairs(reports, dags_folder=folder)
        assert pair.source == "reports"
        # The winner is the task whose report committed the version the conflict names.
        assert (pair.loser, pair.winner, pair.conflicts, pair.kinds) == (
            "orders.merge",
            "orders.append",
            3,
            "APPEND x3",
        )
        assert pair.fix == expected and pair.fix.startswith("Pin the target partitions")


def test_a_winner_no_report_committed_is_named_by_its_operation_and_pairs_are_ranked() -> None:
    lost_to_optimize = lost_try(ORDERS, started_at=START, winning_version=999, winning_operation="OPTIMIZE")
    lonely = final_report((lost_to_optimize, None), (lost_to_optimize, None))
    reports = [*_reports(1), _ids(lonely, "compact")]
    pairs = conflict_pairs(reports, dags_folder=None)
    assert [(p.loser, p.winner, p.conflicts) for p in pairs] == [
        ("orders.compact", "OPTIMIZE", 2),
        ("orders.merge", "orders.append", 1),
    ]
    assert conflict_pairs(reports, dags_folder=None, limit=1) == pairs[:1]


def test_dags_without_a_parseable_file_keep_their_pairs_next_to_the_advisors(tmp_path: Path) -> None:
    (tmp_path / "orders.py").write_text(DAG_FILE)
    lost = lost_try("/lake/stock", started_at=START, winning_version=7, winning_operation="OPTIMIZE")
    elsewhere = {**_ids(final_report((lost, None)), "restock"), "dag_id": "no_file"}
    pairs = conflict_pairs([*_reports(2), elsewhere], dags_folder=str(tmp_path))
    assert [(p.source, p.table, p.loser, p.winner, p.conflicts) for p in pairs] == [
        ("advisor", ORDERS, "orders.merge", "orders.append", 2),
        ("reports", "/lake/stock", "no_file.restock", "OPTIMIZE", 1),
    ]
