"""The Airflow 3 plugin (entry point ``airflow.plugins``): the Delta conflicts view in the Airflow UI.

- ``fastapi_apps``: :mod:`airflow_provider_deltacc.ui.app`, mounted by the api-server under ``/deltacc``;
- ``external_views``: a "Delta conflicts" page in the navigation, and a "Delta commit report" tab on every
  task instance (the same page the operators' "Delta commit report" extra link opens).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_provider_deltacc.ui.app import MAP_INDEX_PLACEHOLDER, URL_PREFIX, create_app

TASK_VIEW_HREF = f"{URL_PREFIX}/task-instance/{{DAG_ID}}/{{RUN_ID}}/{{TASK_ID}}/{MAP_INDEX_PLACEHOLDER}"


class DeltaConflictsPlugin(AirflowPlugin):
    """See the module docstring."""

    name = "deltacc_conflicts"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "Delta conflicts"}]
    external_views = [
        {
            "name": "Delta conflicts",
            "href": f"{URL_PREFIX}/conflicts",
            "destination": "nav",
            "category": "browse",
            "url_route": "delta-conflicts",
        },
        {
            "name": "Delta commit report",
            "href": TASK_VIEW_HREF,
            "destination": "task_instance",
            "url_route": "delta-commit-report",
        },
    ]
