"""Observed against predicted: commit reports of past runs matched to the predicted pairs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.advisor.cli import EXIT_BAD_INPUT, run
from airflow_provider_deltacc.advisor.observed import attach_observed, load_reports, report_task
from airflow_provider_deltacc.contract.exceptions import AdvisorInputError
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator, DeltaUpdateOperator
from tests.unit.advisor.helpers import T, add_column, dag, pair, rows
from tests.unit.advisor.helpers import run as analyse_dags

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]


def _report(
    task: str, status: str, version: int | None, conflicts: list[tuple[str, int | None, str]]
) -> dict[str, Any]:
    attempts = [
        {
            "number": i + 1,
            "outcome": "conflict",
            "conflict": {"kind": kind, "winning_version": won, "winning_operation": op},
        }
        for i, (kind, won, op) in enumerate(conflicts)
    ]
    if status == "committed":
        attempts.append({"number": len(attempts) + 1, "outcome": "committed", "conflict": None})
    return {
        "operation": "X",
        "table": T,
        "status": status,
        "table_version": version,
        "attempts": attempts,
        "txn_app_id": f"airflow/d/{task}/-1/manual__2026-11-22",
        "txn_version": 1,
    }


def _analysis() -> Any:
    with dag() as d:
        DeltaMergeOperator(
            task_id="merge", table=T, source=rows("2026-11-02", 1), keys=["id"], partition_pin=None
        )
        DeltaAppendOperator(task_id="append", table=T, source=rows("2026-11-01", 2))
        DeltaUpdateOperator(
            task_id="u", table="/data/other", set_values={"v": "1"}, partition_values=[{"date": "1"}]
        )
        DeltaUpdateOperator(
            task_id="w", table="/data/other", set_values={"v": "1"}, partition_values=[{"date": "2"}]
        )
    return analyse_dags(d)


def test_report_task_reads_explicit_ids_or_the_txn_app_id() -> None:
    assert report_task({"dag_id": "d", "task_id": "g.t"}) == "d.g.t"
    assert report_task({"txn_app_id": "airflow/d/g.t/3/run"}) == "d.g.t"
    assert report_task({"txn_app_id": "airflow/d/t/-1"}) == "d.t"
    assert report_task({"txn_app_id": "mine"}) is None


def test_conflicts_are_counted_on_the_pair_of_loser_and_winner() -> None:
    reports = [
        _report("append", "committed", 5, []),
        _report("append", "committed", 7, []),
        _report("merge", "committed", 8, [("append", 5, "WRITE"), ("append", 7, "WRITE")]),
    ]
    analysis, unmatched = attach_observed(_analysis(), reports)
    finding = pair(analysis, "merge", "append")
    assert finding.observed["conflicts"] == 2
    assert finding.observed["summary"] == "predicted will, observed 2 conflicts (APPEND x2)"
    assert unmatched == []


def test_the_conflicts_of_every_try_count_not_only_the_last_tries() -> None:
    lost = _report("merge", "conflict_exhausted", None, [("append", 5, "WRITE")])
    won = _report("merge", "committed", 8, [])
    final = {**won, "tries": [{**lost, "try_number": 1}, {**won, "try_number": 2}]}
    analysis, _ = attach_observed(_analysis(), [_report("append", "committed", 5, []), final])
    assert pair(analysis, "merge", "append").observed["conflicts"] == 1


def test_a_pair_with_reports_and_no_conflict_says_so_and_surprises_are_flagged() -> None:
    reports = [
        {**_report("u", "committed", 3, []), "table": "/data/other"},
        {**_report("w", "committed", 4, [("delete_read", 3, "UPDATE")]), "table": "/data/other"},
    ]
    analysis, _ = attach_observed(_analysis(), reports)
    finding = pair(analysis, "u", "w")
    assert finding.observed["summary"] == "predicted cannot, observed 1 conflict (DELETE_READ x1)"
    assert finding.observed["surprise"] is True
    quiet, _ = attach_observed(_analysis(), [_report("append", "committed", 5, [])])
    assert pair(quiet, "merge", "append").observed["summary"] == "predicted will, observed none in 1 report"


def test_an_unknown_winner_is_matched_by_its_operation_or_reported_as_unpredicted() -> None:
    reports = [
        _report("merge", "conflict_exhausted", None, [("append", 41, "WRITE")]),
        _report("merge", "conflict_exhausted", None, [("metadata_changed", 42, "ADD COLUMNS")]),
    ]
    analysis, unmatched = attach_observed(_analysis(), reports)
    assert pair(analysis, "merge", "append").observed["conflicts"] == 1
    assert unmatched == [f"METADATA_CHANGED in d.merge on {T}, lost to a ADD COLUMNS (v42)"]


def test_reports_files_and_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "reports.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [_report("append", "committed", 5, [])]))
    assert load_reports(path)[0]["table_version"] == 5
    (tmp_path / "list.json").write_text(json.dumps({"reports": [_report("merge", "committed", 1, [])]}))
    assert load_reports(tmp_path / "list.json")[0]["table_version"] == 1
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(AdvisorInputError, match=r"bad\.json"):
        load_reports(tmp_path / "bad.json")
    code, text = run(["/nonexistent-dags", "--reports", str(tmp_path / "missing.json")])
    assert code == EXIT_BAD_INPUT and "missing.json" in text


def test_a_metadata_conflict_without_a_winning_version_goes_to_the_schema_change() -> None:
    with dag() as d:
        add_column()
        DeltaAppendOperator(task_id="append", table=T, source=rows("2026-11-01", 2))
        DeltaMergeOperator(task_id="merge", table=T, source=rows("2026-11-02", 1), keys=["id", "date"])
    reports = [_report("append", "conflict_exhausted", None, [("metadata_changed", None, "ADD COLUMNS")])]
    analysis, unmatched = attach_observed(analyse_dags(d), reports)
    assert unmatched == []
    assert pair(analysis, "alter", "append").observed["kinds"] == {"METADATA_CHANGED": 1}
    assert pair(analysis, "merge", "append").observed["conflicts"] == 0


def test_history_names_the_winner_no_report_names(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    table = str(tmp_path / "orders")
    data = pa.table({"id": [1], "date": ["2026-11-01"], "v": ["x"]})
    write_deltalake(table, data, partition_by=["date"])
    write_deltalake(table, data, mode="append", partition_by=["date"])  # v1: the unknown winner, a WRITE
    with dag() as d:
        DeltaMergeOperator(
            task_id="merge", table=table, source=rows("2026-11-02", 1), keys=["id"], partition_pin=None
        )
        DeltaAppendOperator(task_id="append", table=table, source=rows("2026-11-01", 2))
        DeltaUpdateOperator(task_id="u", table=table, set_values={"v": "1"})
    report = {**_report("merge", "conflict_exhausted", None, [("append", 1, None)]), "table": table}
    _, unmatched = attach_observed(analyse_dags(d), [report])
    assert unmatched == [f"APPEND in d.merge on {table}, lost to an unknown commit (v1)"]
    with_history, unmatched = attach_observed(analyse_dags(d), [report], read_history=True)
    assert unmatched == []
    assert pair(with_history, "merge", "append").observed["kinds"] == {"APPEND": 1}
