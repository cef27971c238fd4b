"""The CLI: exit codes, --strict, the table, JSON, bad paths and DAG import errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_deltacc.advisor.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_WILL_CONFLICT, run

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]

REFERENCE = ["--reference", "2026-11-23T00:00"]
HEADER = """
from datetime import datetime
from airflow.sdk import DAG
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator, DeltaUpdateOperator
ROWS = {"kind": "rows", "rows": [[1, "2026-11-01", "x"]], "schema": "id INT, date STRING, v STRING"}
"""
CONFLICTING = (
    HEADER
    + """
with DAG(dag_id="conflicting", schedule=None, start_date=datetime(2026, 1, 1), max_active_runs=1):
    DeltaMergeOperator(task_id="merge", table="/data/t", source=ROWS, keys=["id"], partition_pin=None)
    DeltaAppendOperator(task_id="append", table="/data/t", source=ROWS)
"""
)
SAFE = (
    HEADER
    + """
with DAG(dag_id="safe", schedule=None, start_date=datetime(2026, 1, 1), max_active_runs=1):
    DeltaUpdateOperator(task_id="u1", table="/data/s", set_values={"v": "1"}, partition_values=[{"d": "1"}])
    DeltaUpdateOperator(task_id="u2", table="/data/s", set_values={"v": "1"}, partition_values=[{"d": "2"}])
"""
)


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_the_table_names_the_pair_the_verdict_and_the_fix(tmp_path: Path) -> None:
    path = _write(tmp_path, "conflicting.py", CONFLICTING)
    code, text = run([str(path), *REFERENCE])
    assert code == EXIT_OK
    lines = text.splitlines()
    assert lines[0].startswith(
        "1 DAG, 2 provider tasks, 1 pairs that can run at the same time: 1 will conflict"
    )
    header = lines[2]
    for column in ("verdict", "table", "task A", "task B", "exceptions", "reason", "fix"):
        assert column in header
    row = lines[4]
    assert row.startswith("will conflict")
    cells = [cell.strip() for cell in row.split("|")]
    assert cells[:5] == ["will conflict", "/data/t", "merge", "append", "ConcurrentAppendException"]
    assert "MERGE without partition pin" in text and "pin merge" in text


def test_strict_fails_only_on_will_conflict(tmp_path: Path) -> None:
    conflicting = _write(tmp_path / "a", "conflicting.py", CONFLICTING)
    safe = _write(tmp_path / "b", "safe.py", SAFE)
    code, text = run([str(conflicting), "--strict", *REFERENCE])
    assert code == EXIT_WILL_CONFLICT
    assert text.endswith("--strict: 1 pair(s) will conflict")
    assert run([str(safe), "--strict", *REFERENCE])[0] == EXIT_OK


def test_json_output_and_hide_safe(tmp_path: Path) -> None:
    _write(tmp_path, "conflicting.py", CONFLICTING)
    _write(tmp_path, "safe.py", SAFE)
    code, text = run([str(tmp_path), "--json", *REFERENCE])
    data = json.loads(text)
    assert code == EXIT_OK
    assert data["counts"] == {"will": 1, "can": 0, "hazard": 0, "cannot": 1}
    assert sorted(data["dags"]) == ["conflicting", "safe"]
    assert data["findings"][0]["exceptions"] == ["ConcurrentAppendException"]
    _, table = run([str(tmp_path), "--hide-safe", *REFERENCE])
    assert "safe.u1" not in table and "conflicting.merge" in table, "two DAGs: tasks keep their DAG id"


def test_a_missing_path_is_exit_2_naming_it(tmp_path: Path) -> None:
    code, text = run([str(tmp_path / "nope")])
    assert code == EXIT_BAD_INPUT
    assert str(tmp_path / "nope") in text and "no such file or folder" in text


def test_dag_import_errors_are_exit_2_naming_the_file(tmp_path: Path) -> None:
    _write(tmp_path, "broken_dag.py", "from airflow.sdk import DAG\nraise RuntimeError('boom in the dag')\n")
    code, text = run([str(tmp_path)])
    assert code == EXIT_BAD_INPUT
    assert "broken_dag.py" in text and "boom in the dag" in text


def test_a_folder_without_dags_is_exit_2(tmp_path: Path) -> None:
    _write(tmp_path, "helper.py", "X = 1\n")
    code, text = run([str(tmp_path)])
    assert code == EXIT_BAD_INPUT and "no DAG found" in text


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    path = _write(tmp_path, "conflicting.py", CONFLICTING)
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_deltacc.advisor", str(path), "--strict", *REFERENCE],
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_WILL_CONFLICT, done.stderr
    assert "will conflict" in done.stdout
    assert "pyspark" not in done.stderr
