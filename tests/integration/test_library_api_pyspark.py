"""The library API on a session the application created, classic and Spark Connect, each in a plain Python
process without Airflow: a source function that uses ``F.udf`` and a join MERGEs exactly its rows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.library_api_app import RESULT_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(1)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", ["classic", "connect"])
def test_conflict_safe_merge_runs_pyspark_functions_and_udfs_on_the_applications_session(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from deltalake import DeltaTable

    session = "classic" if kind == "classic" else request.getfixturevalue("spark_connect_server").url
    table = str(tmp_path / "balances")
    completed = subprocess.run(
        [sys.executable, "-m", "tests.integration.library_api_app", session, table],
        cwd=ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert completed.returncode == 0 and lines, (completed.stdout + completed.stderr)[-6000:]
    assert json.loads(lines[-1].removeprefix(RESULT_PREFIX)) == {"status": "committed", "airflow": False}
    rows = sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda row: row["account"])
    assert rows == [{"account": "a", "balance": 11}, {"account": "b", "balance": 30}]
