"""Operator extra link: the task instance's page in the Delta conflicts view (every try, its reason)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey


class DeltaCommitReportLink(BaseOperatorLink):
    """Opens the task instance's page in the provider's UI plugin (:mod:`airflow_provider_deltacc.ui`):
    every try, its attempts, Airflow's decision and the reason, from ``deltacc_report`` (which lists every
    try) and the task instance history.

    Airflow 3 evaluates links on the worker when a try ends (success or failure) and stores the URL.
    """

    name = "Delta commit report"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk import conf

        base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
        map_index = ti_key.map_index if ti_key.map_index is not None else -1
        return (
            f"{base}/deltacc/task-instance/{quote(ti_key.dag_id, safe='')}/{quote(ti_key.run_id, safe='')}"
            f"/{quote(ti_key.task_id, safe='')}/{map_index}"
        )
