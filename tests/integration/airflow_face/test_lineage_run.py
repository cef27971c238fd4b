"""OpenLineage on a real run: with the OpenLineage provider installed and its listener configured, a
``dag.test()`` append reports its parquet source as the input and the Delta table, with the version it
committed, as the output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.lineage_run import TASK_ID

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def _events(log_file: Path) -> list[dict[str, Any]]:
    # The file transport writes one JSON event per line (to one file, with append=true).
    return [json.loads(line) for line in log_file.read_text().splitlines() if line.strip()]


def test_an_append_reports_its_source_and_the_committed_table_version(
    airflow_db: Path, tmp_path: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "incoming.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3]}), source)
    table = tmp_path / "events"
    log_file = tmp_path / "openlineage.jsonl"
    env = {
        **os.environ,
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(log_file), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "deltacc-tests",
        "DELTACC_LEASE_STORE_URL": f"sqlite:///{tmp_path / 'leases.db'}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.lineage_run", str(table), str(source), str(tmp_path / "dags")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]

    complete = [
        e
        for e in _events(log_file)
        if e.get("eventType") == "COMPLETE" and e["job"]["name"].endswith(f".{TASK_ID}")
    ]
    assert len(complete) == 1, [(e.get("eventType"), e["job"]["name"]) for e in _events(log_file)]
    event = complete[0]
    assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [("file", str(source))]
    [output] = event["outputs"]
    assert (output["namespace"], output["name"]) == ("file", str(table))
    assert output["facets"]["version"]["datasetVersion"] == "0"
