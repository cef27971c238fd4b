"""Table maintenance for the ingestion example's ``ingested_orders``: gate -> OPTIMIZE -> VACUUM.

The :func:`~airflow_provider_deltacc.task_groups.table_maintenance` group waits (deferred, no worker slot)
until no writer that could conflict holds a write lease on the table and no declared write window is open,
compacts the closed partitions with Z-ordering by ``order_id``, then VACUUMs with the table's own retention
(a shorter one is refused unless forced). The ingestion DAG's writers take write leases automatically, so
a maintenance run that starts while they write waits for them instead of failing them.

Environment: ``DELTACC_EXAMPLE_ROOT`` and ``DELTACC_EXECUTION_MODE``, as for the ingestion example; when
the writers and this DAG may run on different machines (any executor but the LocalExecutor), a shared lease
store in ``[deltacc] lease_store_conn_id`` (``AIRFLOW__DELTACC__LEASE_STORE_CONN_ID``, a ``postgres``
connection).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.task_groups import table_maintenance

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
TARGET_TABLE = f"{EXAMPLE_ROOT}/tables/ingested_orders"


@dag(
    dag_id="example_deltacc_maintenance",
    schedule="30 3 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # a slow run delays the next one instead of piling up behind it
    max_active_tasks=2,  # two Spark jobs at a time (each a driver JVM in spark_submit), in default_pool
    tags=["deltacc", "example"],
    default_args={"execution_mode": EXECUTION_MODE},  # conn_id: the mode's default connection
    doc_md=__doc__,
)
def example_deltacc_maintenance() -> None:
    maintain = table_maintenance(
        table=TARGET_TABLE,
        zorder_by=["order_id"],
        only_closed_partitions=True,  # skip the dates an ingestion run is writing right now
        retention_hours=None,  # the table's delta.deletedFileRetentionDuration (7 days by default)
        deferrable=True,  # wait in the triggerer, whatever default_deferrable says
        poll_interval=30,
        gate_wait_timeout=6 * 3600,
    )

    @task
    def report(table: str = TARGET_TABLE) -> dict[str, Any]:
        """What maintenance did, read from the table's history with delta-rs."""
        from deltalake import DeltaTable

        history = DeltaTable(table).history(10)
        done = [h for h in history if h.get("operation") in ("OPTIMIZE", "VACUUM START", "VACUUM END")]
        return {
            "version": DeltaTable(table).version(),
            "maintenance": [{"version": h.get("version"), "operation": h.get("operation")} for h in done],
        }

    maintain >> report()


example_deltacc_maintenance()
