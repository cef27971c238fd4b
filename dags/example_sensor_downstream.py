"""A downstream job driven by a Delta commit: wait (deferred, no worker slot) for a MERGE on ``orders``.

``DeltaTableVersionSensor`` defers to the triggerer, which reads the table's ``_delta_log`` with delta-rs
(no JVM) until a commit of operation ``MERGE`` newer than ``after_version`` shows up. The downstream task
then reads the table with delta-rs and summarises it per partition.

Pair it with ``example_deltacc_concurrent_merges`` (same ``DELTACC_EXAMPLE_ROOT``): trigger this DAG
first, and it resumes when that DAG's MERGEs commit. ``after_version`` is a DAG param (default -1: any
MERGE in the table's history).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import Param, dag, task

from airflow_provider_deltacc.sensors.table_version import DeltaTableVersionSensor

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
ORDERS_TABLE = f"{EXAMPLE_ROOT}/tables/orders"


@dag(
    dag_id="example_deltacc_sensor_downstream",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # a slow run delays the next one instead of piling up behind it
    tags=["deltacc", "example"],
    params={"after_version": Param(-1, type="integer", minimum=-1)},
    doc_md=__doc__,
)
def example_deltacc_sensor_downstream() -> None:
    wait_for_merge = DeltaTableVersionSensor(
        task_id="wait_for_merge",
        table=ORDERS_TABLE,
        operation="MERGE",
        after_version="{{ params.after_version }}",
        deferrable=True,  # wait in the triggerer, whatever [deltacc] default_deferrable says
        poke_interval=15,
        timeout=timedelta(hours=6).total_seconds(),
    )

    @task
    def summarise(match: dict[str, Any]) -> dict[str, Any]:
        """Rows and shipped orders per date, read with delta-rs at the version the sensor saw (or later)."""
        from deltalake import DeltaTable

        table = DeltaTable(ORDERS_TABLE)
        per_date: dict[str, dict[str, int]] = {}
        for row in table.to_pyarrow_table(columns=["date", "status"]).to_pylist():
            entry = per_date.setdefault(str(row["date"]), {"rows": 0, "shipped": 0})
            entry["rows"] += 1
            entry["shipped"] += row["status"] == "shipped"
        return {"merge_version": match["version"], "read_version": table.version(), "per_date": per_date}

    summarise(wait_for_merge.output)


example_deltacc_sensor_downstream()
