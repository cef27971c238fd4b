"""The conflicts page of a real ``airflow api-server``: the task pairs and their fixes are the conflict
advisor's, read from the DAG serialized in the metadata DB, not the fallback read from the reports alone. The
api-server imports no DAG file: its DAGs folder holds only a file that leaves a mark and raises when imported.
No browser: a JWT from the simple auth manager's ``/auth/token``."""

from __future__ import annotations

import json
import re
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.api_server import ADMIN_PASSWORD, ADMIN_USER, api_server
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed
from tests.support.serialized_dags import remove_serialized_dags, write_serialized_dags
from tests.support.ui_metadata import PastTry, TaskRow, add_task_instances

pytestmark = [
    pytest.mark.integration,
    pytest.mark.jvm_free,
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

DAG_ID = "deltacc_test_ui_pairs"
TABLE = "/lake/ui_pairs_orders"
ROWS = {"kind": "rows", "rows": [[1, "2026-11-01", "x"]], "schema": "id INT, date STRING, v STRING"}


def _dag() -> Any:
    """An unpinned MERGE and a blind append on one table (the advisor predicts they conflict)."""
    from airflow.sdk import DAG

    from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator

    with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        DeltaMergeOperator(task_id="merge", table=TABLE, source=ROWS, keys=["id"], partition_pin=None)
        DeltaAppendOperator(task_id="append", table=TABLE, source=ROWS)
    return dag


def _rows() -> list[TaskRow]:
    """Two runs, two and one days ago (inside the page's default range, the last 7 days): ``append`` commits,
    then ``merge`` loses an unpinned APPEND conflict to it and is retried."""
    rows = []
    two_days_ago = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=2)
    for n in range(2):
        start = two_days_ago + timedelta(days=n)
        version = 10 + n
        append = final_report((committed_try(TABLE, started_at=start.timestamp(), version=version), None))
        lost = lost_try(TABLE, started_at=start.timestamp(), winning_version=version, pinned_columns=())
        merge, reason = retried_then_committed(TABLE, started_at=start.timestamp(), version=20 + n, lost=lost)
        run_id = f"manual__{start:%Y-%m-%d}"
        rows.append(TaskRow(DAG_ID, run_id, "append", append, ended=start))
        past = (PastTry(1, retry_reason=reason),)
        rows.append(TaskRow(DAG_ID, run_id, "merge", merge, try_number=2, past=past, ended=start))
    return rows


def _get(url: str, token: str) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return str(response.read().decode())


def test_the_conflicts_page_shows_the_advisors_pairs_from_the_serialized_dag(
    airflow_db: Path, tmp_path: Path
) -> None:
    from airflow.utils.session import create_session

    dags = tmp_path / "dags"
    dags.mkdir()
    imported = tmp_path / "imported"
    (dags / "orders.py").write_text(f"open({str(imported)!r}, 'w').close()\nraise RuntimeError('imported')\n")
    write_serialized_dags([_dag()])
    try:
        with create_session() as session:
            add_task_instances(session, _rows())
        with api_server(tmp_path / "api-home", dags_folder=dags) as server:
            login = urllib.request.Request(
                f"{server.url}/auth/token",
                data=json.dumps({"username": ADMIN_USER, "password": ADMIN_PASSWORD}).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(login, timeout=30) as response:
                token = json.loads(response.read())["access_token"]
            page = _get(f"{server.url}/deltacc/conflicts", token)
    finally:
        remove_serialized_dags([DAG_ID])

    assert not imported.exists(), "the api-server imported a DAG file"
    pairs = [re.sub(r"<[^>]+>", "|", row) for row in re.findall(r"<tr class='pair'>(.*?)</tr>", page)]
    mine = [row for row in pairs if TABLE in row]
    assert len(mine) == 1, pairs
    cells = [cell for cell in mine[0].split("|") if cell]
    assert cells[0] == TABLE
    assert {cells[1], cells[2]} == {f"{DAG_ID}.merge", f"{DAG_ID}.append"}
    assert cells[3] == "2 (APPEND x2)"
    # The advisor's fix names the task and its partition_pin setting; the reports' fallback would say
    # "Pin the target partitions with literal predicates ...".
    assert cells[4].startswith("pin merge:") and "partition_pin=" in cells[4], cells
