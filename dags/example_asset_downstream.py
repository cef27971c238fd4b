"""A downstream job scheduled on the ``orders`` Delta table's asset: it runs after each commit to it.

Every writer and maintenance operator declares its table as an outlet and emits an asset event per commit
(see ``docs/assets.md``). This DAG is scheduled on the asset of the table that
``example_deltacc_concurrent_merges`` writes (same ``DELTACC_EXAMPLE_ROOT``): the scheduler starts a run
once a commit to it lands, with no sensor and no triggerer. The task reads the events that triggered the
run and ignores OPTIMIZE and VACUUM (``changes_data`` False).

Compare ``example_deltacc_sensor_downstream``: the sensor also sees commits made outside Airflow (a Spark job,
a notebook), the asset only commits made by this provider's operators.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.lineage.assets import table_asset

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
ORDERS_TABLE = f"{EXAMPLE_ROOT}/tables/orders"
ORDERS = table_asset(ORDERS_TABLE)


@dag(
    dag_id="example_deltacc_asset_downstream",
    schedule=[ORDERS],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["deltacc", "example"],
    doc_md=__doc__,
)
def example_deltacc_asset_downstream() -> None:
    @task
    def new_versions(triggering_asset_events: Any = None) -> list[int]:
        """The table versions that changed data since the last run (OPTIMIZE and VACUUM are skipped)."""
        events = (triggering_asset_events or {}).get(ORDERS, [])
        return sorted(e.extra["version"] for e in events if e.extra.get("changes_data", True))

    new_versions()


example_deltacc_asset_downstream()
