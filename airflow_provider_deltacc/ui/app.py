"""The FastAPI app the plugin mounts under ``/deltacc`` in the Airflow api-server.

Airflow mounts a plugin's app as it is, without authentication, so every route here depends on Airflow's own
``get_user`` (the JWT in the ``Authorization`` header or the UI's session cookie; an anonymous request gets
401) and asks the auth manager for read access to the DAGs it shows. It only reads.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse

URL_PREFIX = "/deltacc"
#: What the Airflow UI replaces with the map index in a task instance tab's URL (mapped tasks only).
MAP_INDEX_PLACEHOLDER = "{MAP_INDEX}"


def _authorized_dag_ids(user: Any) -> set[str]:
    from airflow.api_fastapi.app import get_auth_manager

    return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))


def _map_index(segment: str) -> int:
    """The map index in a task view's path. The Airflow UI fills ``{MAP_INDEX}`` in the task instance tab's
    URL only for a mapped task and leaves the placeholder as it is otherwise: that means unmapped (-1)."""
    from fastapi import HTTPException

    if segment == MAP_INDEX_PLACEHOLDER:
        return -1
    try:
        return int(segment)
    except ValueError:
        raise HTTPException(404, f"map index {segment!r} is not a number (-1 for an unmapped task)") from None


def create_app() -> FastAPI:
    """Build the app (routes only; nothing runs until a request comes)."""
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import get_user, requires_access_dag

    app = FastAPI(title="Delta conflicts", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/conflicts", response_class=HTMLResponse)
    def conflicts(request: Request, user: Any = Depends(get_user)) -> HTMLResponse:  # noqa: B008
        """The conflicts of the tables, DAGs and time range the query string asks for (see
        :meth:`~airflow_provider_deltacc.ui.filters.ViewFilters.from_query`)."""
        from airflow.utils.session import create_session

        from airflow_provider_deltacc.contract.exceptions import ViewInputError
        from airflow_provider_deltacc.exceptions import DeltaCCSummaryTableMissing
        from airflow_provider_deltacc.ui.aggregate import summarise
        from airflow_provider_deltacc.ui.filters import ViewFilters
        from airflow_provider_deltacc.ui.pages import conflicts_page, error_page
        from airflow_provider_deltacc.ui.pairs import conflict_pairs

        try:
            filters = ViewFilters.from_query(request.query_params)
        except ViewInputError as exc:
            return HTMLResponse(error_page("Delta conflicts", str(exc)), status_code=400)
        dag_ids = sorted(_authorized_dag_ids(user))
        try:
            with create_session() as session:
                summary = summarise(session, filters, dag_ids)
        except DeltaCCSummaryTableMissing as exc:
            return HTMLResponse(error_page("Delta conflicts", str(exc)), status_code=503)
        pairs = conflict_pairs(summary.reports)
        return HTMLResponse(conflicts_page(summary, pairs, filters, dag_ids))

    @app.get("/table", response_class=HTMLResponse)
    def table_page(
        user: Any = Depends(get_user),  # noqa: B008 (FastAPI's dependency idiom)
        table: str = "",
        since: str | None = None,
        until: str | None = None,
    ) -> HTMLResponse:
        """Who is fighting over ``table`` (any spelling) from ``since`` to ``until`` (the last 24 hours)."""
        from datetime import UTC, datetime

        from airflow_provider_deltacc.contract.exceptions import ViewInputError
        from airflow_provider_deltacc.ui.fighting import parse_time_range, table_view
        from airflow_provider_deltacc.ui.fighting_page import fighting_page
        from airflow_provider_deltacc.ui.pages import error_page

        try:
            if not table.strip():
                raise ViewInputError("table", table, "names no table: give its path, URI or name")
            time_range = parse_time_range(since, until, now=datetime.now(UTC))
        except ViewInputError as exc:
            return HTMLResponse(error_page("Who is fighting over a table", str(exc)), status_code=400)
        return HTMLResponse(fighting_page(table_view(table, time_range, _authorized_dag_ids(user))))

    @app.get(
        "/task-instance/{dag_id}/{run_id}/{task_id}/{map_index}",
        response_class=HTMLResponse,
        dependencies=[Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))],
    )
    def task_instance(dag_id: str, run_id: str, task_id: str, map_index: str) -> str:
        from airflow.utils.session import create_session

        from airflow_provider_deltacc.ui.data import read_task_instance, try_rows
        from airflow_provider_deltacc.ui.pages import task_page

        index = _map_index(map_index)
        with create_session() as session:
            report, reasons, states = read_task_instance(session, dag_id, run_id, task_id, index)
        rows = try_rows(report, reasons) if report is not None else []
        label = f"{dag_id}.{task_id}" + (f"[{index}]" if index >= 0 else "")
        return task_page(f"Delta commit report: {label}, {run_id}", rows, states)

    return app
