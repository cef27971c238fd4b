"""The plugin's app behind Airflow's authentication and DAG authorization: an anonymous request gets 401,
and a user sees only the DAGs the auth manager lets them read (a task view of another DAG gets 403)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.commit_reports import retried_then_committed
from tests.support.ui_auth import app_client, bearer
from tests.support.ui_metadata import PastTry, TaskRow

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

MINE, THEIRS = "ui_app_mine", "ui_app_theirs"


@pytest.fixture
def client(add_rows: Callable[..., None], monkeypatch: pytest.MonkeyPatch) -> Any:
    for dag_id, table in ((MINE, "/lake/mine"), (THEIRS, "/lake/theirs")):
        report, reason = retried_then_committed(
            table, started_at=datetime(2026, 11, 20, tzinfo=UTC).timestamp(), version=3
        )
        add_rows(
            TaskRow(dag_id, "run_1", "merge", report, try_number=2, past=(PastTry(1, retry_reason=reason),))
        )
    return app_client(monkeypatch, viewer_dag=MINE)


def test_anonymous_requests_are_refused(client: Any) -> None:
    assert client.get("/conflicts").status_code == 401
    assert client.get(f"/task-instance/{MINE}/run_1/merge/-1").status_code == 401
    assert client.get("/conflicts", headers={"Authorization": "Bearer not-a-token"}).status_code == 403


def test_a_user_sees_only_the_dags_they_may_read(client: Any) -> None:
    viewer = bearer("viewer", "viewer")
    page = client.get("/conflicts", headers=viewer)
    assert page.status_code == 200
    assert "/lake/mine" in page.text and f"/deltacc/task-instance/{MINE}/run_1/merge/-1" in page.text
    assert "/lake/theirs" not in page.text and THEIRS not in page.text

    mine = client.get(f"/task-instance/{MINE}/run_1/merge/-1", headers=viewer)
    assert mine.status_code == 200 and "try 1" in mine.text and "try 2" in mine.text
    assert client.get(f"/task-instance/{THEIRS}/run_1/merge/-1", headers=viewer).status_code == 403

    admin = client.get("/conflicts", headers=bearer("admin", "admin"))
    assert "/lake/mine" in admin.text and "/lake/theirs" in admin.text


def test_the_task_instance_tabs_url_of_an_unmapped_task_opens_its_view(client: Any) -> None:
    """The Airflow UI leaves ``{MAP_INDEX}`` unreplaced in the tab's URL when the task is not mapped."""
    from airflow_provider_deltacc.ui.plugin import TASK_VIEW_HREF

    admin = bearer("admin", "admin")
    path = TASK_VIEW_HREF.removeprefix("/deltacc").replace("{DAG_ID}", MINE).replace("{RUN_ID}", "run_1")
    tab = client.get(path.replace("{TASK_ID}", "merge"), headers=admin)
    assert tab.status_code == 200 and "try 1" in tab.text and "try 2" in tab.text
    assert f"Delta commit report: {MINE}.merge, run_1" in tab.text
    bad = client.get(f"/task-instance/{MINE}/run_1/merge/first", headers=admin)
    assert bad.status_code == 404 and "-1 for an unmapped task" in bad.text


def test_the_page_filters_by_table_in_any_spelling_and_never_past_the_users_dags(client: Any) -> None:
    admin, viewer = bearer("admin", "admin"), bearer("viewer", "viewer")
    page = client.get("/conflicts", params={"table": "file:/lake/mine/"}, headers=admin)
    assert page.status_code == 200
    assert "<h2>/lake/mine</h2>" in page.text and "<h2>/lake/theirs</h2>" not in page.text
    assert "<option value='/lake/theirs'>" in page.text  # still offered in the filter
    asked_for_theirs = client.get("/conflicts", params={"dag_id": THEIRS}, headers=viewer)
    assert asked_for_theirs.status_code == 200 and "/lake/theirs" not in asked_for_theirs.text
    assert "No Delta commit reports yet." in asked_for_theirs.text
    old = client.get("/conflicts", params={"since": "2020-01-01", "until": "2020-01-31"}, headers=admin)
    assert "No Delta commit reports yet." in old.text  # the reports were pushed today


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"since": "last tuesday"}, "since='last tuesday': not a date or a time"),
        ({"since": "2026-11-20", "until": "2026-11-10"}, ": not before until='2026-11-10'"),
        ({"page": "0"}, "page='0': not a number the view takes: give 1 or more"),
        ({"per_page": "100000"}, "per_page='100000': not a number the view takes: give 1 up to 500"),
    ],
)
def test_a_bad_query_gets_400_naming_the_parameter_value_and_form(
    client: Any, params: dict[str, str], named: str
) -> None:
    page = client.get("/conflicts", params=params, headers=bearer("admin", "admin"))
    assert page.status_code == 400
    assert named in page.text.replace("&#x27;", "'")
