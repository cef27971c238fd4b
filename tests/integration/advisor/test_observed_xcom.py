"""Observed against predicted from the Airflow metadata database: the reports tasks pushed to XCom."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.advisor.cli import EXIT_OK, run
from airflow_provider_deltacc.advisor.observed import xcom_reports
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

DAG_ID = "advisor_xcom_probe"
DAG_FILE = f"""
from datetime import datetime
from airflow.sdk import DAG
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
ROWS = {{"kind": "rows", "rows": [[1, "2026-11-01", "x"]], "schema": "id INT, date STRING, v STRING"}}
with DAG(dag_id="{DAG_ID}", schedule=None, start_date=datetime(2026, 1, 1), max_active_runs=1):
    DeltaMergeOperator(task_id="merge", table="/data/t", source=ROWS, keys=["id"], partition_pin=None)
    DeltaAppendOperator(task_id="append", table="/data/t", source=ROWS)
"""


PUSHING_DAG_FILE = f"""
from datetime import datetime
from airflow.sdk import DAG, task
REPORTS = {{reports!r}}
with DAG(dag_id="{DAG_ID}", schedule=None, start_date=datetime(2026, 1, 1)):
    for task_id, report in REPORTS.items():
        @task(task_id=task_id)
        def push(value=report, ti=None):
            ti.xcom_push(key="{REPORT_XCOM_KEY}", value=value)
        push()
"""


def _reports() -> dict[str, dict[str, Any]]:
    conflict = {"kind": "append", "winning_version": 7, "winning_operation": "WRITE"}
    return {
        "append": {
            "operation": "WRITE",
            "table": "/data/t",
            "status": "committed",
            "table_version": 7,
            "attempts": [{"number": 1, "outcome": "committed", "conflict": None}],
        },
        "merge": {
            "operation": "MERGE",
            "table": "/data/t",
            "status": "committed",
            "table_version": 8,
            "attempts": [
                {"number": 1, "outcome": "conflict", "conflict": conflict},
                {"number": 2, "outcome": "committed", "conflict": None},
            ],
        },
    }


def test_reports_pushed_to_xcom_are_read_back_and_matched(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import airflow.settings

    from airflow_provider_deltacc.advisor.loader import load_dags

    reports = _reports()
    # A stand-in DAG with the Delta tasks' ids whose tasks push what those tasks would have pushed;
    # dag.test() serializes the DAGs of the DAGs folder, so it is the only DAG there.
    pushing = tmp_path / "pushing"
    pushing.mkdir()
    (pushing / "probe.py").write_text(PUSHING_DAG_FILE.replace("{reports!r}", repr(reports)))
    monkeypatch.setattr(airflow.settings, "DAGS_FOLDER", str(pushing))
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(pushing))
    [dag] = load_dags([pushing])
    dag_run = dag.test()

    found = [r for r in xcom_reports([DAG_ID]) if r["run_id"] == dag_run.run_id]
    assert sorted(found, key=lambda r: r["task_id"]) == [
        {**reports[t], "dag_id": DAG_ID, "task_id": t, "run_id": dag_run.run_id, "map_index": -1}
        for t in ("append", "merge")
    ]
    delta_dag = tmp_path / "delta" / "probe.py"
    delta_dag.parent.mkdir()
    delta_dag.write_text(DAG_FILE)
    code, text = run([str(delta_dag), "--xcom", "--json"])
    assert code == EXIT_OK, text
    assert '"summary": "predicted will, observed 1 conflict (APPEND x1)"' in text
