"""The task pairs that conflict most: the advisor's pairs and fixes when the DAG is serialized in the metadata
DB (the api-server reads DAGs from there and imports no DAG file), else the pairs read from the reports alone
with the conflict's own advice."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.contract.conflict import Conflict
from airflow_provider_deltacc.occ.advice import advice_for
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.ui import pairs as ui_pairs
from airflow_provider_deltacc.ui.pairs import conflict_pairs
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed
from tests.support.serialized_dags import remove_serialized_dags, write_serialized_dags
from tests.support.ui_metadata import PastTry, TaskRow

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]

DAG_ID = "ui_pairs_orders"
ORDERS = "/lake/orders"
START = datetime(2026, 11, 20, 9, tzinfo=UTC).timestamp()
ROWS = {"kind": "rows", "rows": [[1, "2026-11-01", "x"]], "schema": "id INT, date STRING, v STRING"}


def _orders_dag(*, pin: str | None = None) -> Any:
    """Two tasks on one table: a MERGE (unpinned by default) and a blind append; the advisor predicts that
    they conflict unless the MERGE is pinned."""
    from airflow.sdk import DAG

    with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        DeltaMergeOperator(task_id="merge", table=ORDERS, source=ROWS, keys=["id"], partition_pin=pin)
        DeltaAppendOperator(task_id="append", table=ORDERS, source=ROWS)
    return dag


def _ids(report: dict[str, Any], task_id: str, run_id: str = "run_1") -> dict[str, Any]:
    return {**report, "dag_id": DAG_ID, "task_id": task_id, "run_id": run_id, "map_index": -1}


def _lost_and_winning(merges: int) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """Per run: ``append`` committed version 10, 11, ...; ``merge`` lost an unpinned APPEND conflict to it."""
    runs = []
    for n in range(merges):
        version = 10 + n
        append = final_report((committed_try(ORDERS, started_at=START, version=version), None))
        lost = lost_try(ORDERS, started_at=START, winning_version=version, pinned_columns=())
        merge, reason = retried_then_committed(ORDERS, started_at=START, version=100 + n, lost=lost)
        runs.append((f"run_{n}", reason, append, merge))
    return runs


def _reports(merges: int) -> list[dict[str, Any]]:
    reports = []
    for run_id, _, append, merge in _lost_and_winning(merges):
        reports += [_ids(append, "append", run_id), _ids(merge, "merge", run_id)]
    return reports


@pytest.fixture
def serialize(airflow_db: Path) -> Iterator[Callable[..., None]]:
    """``serialize(*dags)``: write DAG objects to the metadata DB as the DAG processor does; removed after.
    Each test starts without a cached analysis."""
    written: set[str] = set()

    def write(*dags: Any) -> None:
        written.update(d.dag_id for d in dags)
        write_serialized_dags(dags)

    ui_pairs._analyses.clear()
    remove_serialized_dags([DAG_ID])
    yield write
    remove_serialized_dags(written)
    ui_pairs._analyses.clear()


def test_with_a_serialized_dag_the_pairs_and_fixes_are_the_advisors(serialize: Callable[..., None]) -> None:
    serialize(_orders_dag())
    pairs = conflict_pairs(_reports(2))
    assert len(pairs) == 1
    (pair,) = pairs
    assert pair.source == "advisor"
    assert {pair.loser, pair.winner} == {f"{DAG_ID}.merge", f"{DAG_ID}.append"}
    assert (pair.table, pair.conflicts, pair.kinds) == (ORDERS, 2, "APPEND x2")
    # The advisor's fix names the task and the operator's own setting, which the reports cannot know.
    assert pair.fix.startswith("pin merge:") and "partition_pin=" in pair.fix


def test_without_a_serialized_dag_the_pairs_come_from_the_reports_with_the_conflicts_advice(
    serialize: Callable[..., None],
) -> None:
    reports = _reports(3)
    conflict = Conflict.from_dict(reports[1]["tries"][0]["attempts"][0]["conflict"])
    expected = advice_for(conflict, pinned_columns=())
    (pair,) = conflict_pairs(reports)
    assert pair.source == "reports"
    # The winner is the task whose report committed the version the conflict names.
    assert (pair.loser, pair.winner, pair.conflicts, pair.kinds) == (
        f"{DAG_ID}.merge",
        f"{DAG_ID}.append",
        3,
        "APPEND x3",
    )
    assert pair.fix == expected and pair.fix.startswith("Pin the target partitions")


def test_a_serialized_dag_the_api_server_cannot_deserialize_keeps_its_pairs_from_the_reports(
    serialize: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.models.serialized_dag import SerializedDagModel

    serialize(_orders_dag())

    def unreadable(row: Any) -> Any:
        raise ValueError("timetable 'plugins.Custom' is not registered")

    monkeypatch.setattr(SerializedDagModel, "dag", property(unreadable))
    (pair,) = conflict_pairs(_reports(2))
    assert (pair.source, pair.loser, pair.winner, pair.conflicts) == (
        "reports",
        f"{DAG_ID}.merge",
        f"{DAG_ID}.append",
        2,
    )


def test_a_winner_no_report_committed_is_named_by_its_operation_and_pairs_are_ranked(
    serialize: Callable[..., None],
) -> None:
    lost_to_optimize = lost_try(ORDERS, started_at=START, winning_version=999, winning_operation="OPTIMIZE")
    lonely = final_report((lost_to_optimize, None), (lost_to_optimize, None))
    reports = [*_reports(1), _ids(lonely, "compact")]
    pairs = conflict_pairs(reports)
    assert [(p.loser, p.winner, p.conflicts) for p in pairs] == [
        (f"{DAG_ID}.compact", "OPTIMIZE", 2),
        (f"{DAG_ID}.merge", f"{DAG_ID}.append", 1),
    ]
    assert conflict_pairs(reports, limit=1) == pairs[:1]


def test_dags_not_serialized_keep_their_pairs_next_to_the_advisors(serialize: Callable[..., None]) -> None:
    serialize(_orders_dag())
    lost = lost_try("/lake/stock", started_at=START, winning_version=7, winning_operation="OPTIMIZE")
    elsewhere = {**_ids(final_report((lost, None)), "restock"), "dag_id": "ui_pairs_not_serialized"}
    pairs = conflict_pairs([*_reports(2), elsewhere])
    assert [(p.source, p.table, p.loser, p.winner, p.conflicts) for p in pairs] == [
        ("advisor", ORDERS, f"{DAG_ID}.merge", f"{DAG_ID}.append", 2),
        ("reports", "/lake/stock", "ui_pairs_not_serialized.restock", "OPTIMIZE", 1),
    ]


def test_the_analysis_is_reused_until_the_serialized_dag_changes(
    serialize: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_deltacc.advisor import analysis

    calls: list[tuple[str, ...]] = []
    original = analysis.analyse

    def counted(dags: Any, **kwargs: Any) -> Any:
        listed = list(dags)
        calls.append(tuple(d.dag_id for d in listed))
        return original(listed, **kwargs)

    monkeypatch.setattr(analysis, "analyse", counted)
    serialize(_orders_dag())
    first = conflict_pairs(_reports(2))
    assert conflict_pairs(_reports(2)) == first and calls == [(DAG_ID,)]

    # The DAG processor writes the changed DAG (the MERGE now pinned): the page analyses it again.
    monkeypatch.setenv("AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL", "0")
    serialize(_orders_dag(pin="auto"))
    (pair,) = conflict_pairs(_reports(2))
    assert calls == [(DAG_ID,), (DAG_ID,)]
    assert pair.source == "advisor" and not pair.fix.startswith("pin merge:")


@pytest.fixture
def page(add_rows: Callable[..., None], monkeypatch: pytest.MonkeyPatch) -> Callable[[], str]:
    """``page()``: the conflicts page of the plugin's app as an admin sees it, with two runs' reports of
    ``DAG_ID`` in the metadata DB."""
    from airflow.api_fastapi.app import _AuthManagerState, create_auth_manager, get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi.testclient import TestClient

    from airflow_provider_deltacc.ui.app import create_app

    for run_id, reason, append, merge in _lost_and_winning(2):
        ended = datetime(2026, 11, 20, 9, tzinfo=UTC)
        add_rows(
            TaskRow(DAG_ID, run_id, "append", append, ended=ended),
            TaskRow(DAG_ID, run_id, "merge", merge, try_number=2, past=(PastTry(1, retry_reason=reason),)),
        )
    manager = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
    monkeypatch.setenv("AIRFLOW__CORE__AUTH_MANAGER", manager)
    monkeypatch.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "admin:admin")
    monkeypatch.setenv("AIRFLOW__API_AUTH__JWT_SECRET", "deltacc-ui-unit-test-jwt-secret-0123456789")
    monkeypatch.setattr(_AuthManagerState, "instance", None)
    create_auth_manager().init()
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
    client = TestClient(create_app())

    def get() -> str:
        response = client.get("/conflicts", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200
        return str(response.text)

    return get


def test_the_page_reads_the_serialized_dag_and_imports_no_dag_file(
    serialize: Callable[..., None], page: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DAGs folder holds a DAG file that leaves a mark and raises when imported, and no DagBag may be
    built: the page still gives the advisor's pair and fix, from the serialized DAG."""
    import airflow.dag_processing.dagbag

    dags = tmp_path / "dags"
    dags.mkdir()
    imported = tmp_path / "imported"
    (dags / "orders.py").write_text(f"open({str(imported)!r}, 'w').close()\nraise RuntimeError('imported')\n")
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(dags))

    class NoDagBag:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise AssertionError("the page built a DagBag")

    serialize(_orders_dag())
    monkeypatch.setattr(airflow.dag_processing.dagbag, "DagBag", NoDagBag)
    html = page()

    assert not imported.exists()
    rows = [re.sub(r"<[^>]+>", "|", row) for row in re.findall(r"<tr class='pair'>(.*?)</tr>", html)]
    mine = [[cell for cell in row.split("|") if cell] for row in rows if ORDERS in row]
    assert len(mine) == 1, rows
    cells = mine[0]
    assert {cells[1], cells[2]} == {f"{DAG_ID}.merge", f"{DAG_ID}.append"}
    assert cells[3] == "2 (APPEND x2)"
    assert cells[4].startswith("pin merge:") and "partition_pin=" in cells[4], cells
