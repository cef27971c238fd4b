"""Operator extra link: the commit report of the task instance's latest try."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey


class DeltaCommitReportLink(BaseOperatorLink):
    """Opens the task instance's XCom tab, where ``deltacc_report`` holds the try's commit report.

    Airflow 3 evaluates links on the worker when a try ends (success or failure) and stores the URL,
    so every try gets a link; XCom itself holds the report of the latest try, and the task log keeps
    each try's one-line summary.
    """

    name = "Delta commit report"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk import conf

        base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
        path = (
            f"/dags/{quote(ti_key.dag_id, safe='')}/runs/{quote(ti_key.run_id, safe='')}"
            f"/tasks/{quote(ti_key.task_id, safe='')}"
        )
        if ti_key.map_index is not None and ti_key.map_index >= 0:
            path += f"/mapped/{ti_key.map_index}"
        return f"{base}{path}/xcom"
