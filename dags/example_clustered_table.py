"""A liquid-clustered table, fed by concurrent sources and maintained: staging group, then maintenance group.

``customer_events`` is clustered by ``region`` (``CLUSTER BY``) instead of partitioned. In open-source Delta a
clustered table has no partitions to pin, and predicates on its clustering columns do not keep concurrent
writers apart: any commit during a MERGE fails it (measured; ``docs/clustering.md``). So the sources are not
merged concurrently: :func:`~airflow_provider_deltacc.task_groups.staging_append_then_merge` lands each one
as a blind append into a staging table (appends never conflict), runs ONE MERGE of this run's batches into
the clustered target (which its ``create_target`` task creates ``CLUSTER BY (region)``), and cleans up.
:func:`~airflow_provider_deltacc.task_groups.table_maintenance` then waits until no writer holds a lease,
runs OPTIMIZE (incremental clustering; ``full=True`` would recluster every file) and VACUUM.

Environment: ``DELTACC_EXAMPLE_ROOT`` and ``DELTACC_EXECUTION_MODE``, as for the other examples;
``DELTACC_EXAMPLE_SOURCES``: how many sources land per run (default 3, at most 8).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.task_groups import staging_append_then_merge, table_maintenance

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
TARGET_TABLE = f"{EXAMPLE_ROOT}/tables/customer_events"
STAGING_TABLE = f"{EXAMPLE_ROOT}/tables/customer_events_staging"
SCHEMA = "customer_id BIGINT, region STRING, status STRING, updated_at BIGINT"
CLUSTER_COLUMNS = ["region"]
REGIONS = ("eu", "us", "apac")
SOURCES = max(1, min(8, int(os.environ.get("DELTACC_EXAMPLE_SOURCES", "3"))))


def source_rows(s: int) -> list[list[Any]]:
    """Source ``s``: two customers of its own per region, and customer 1 (every source reports it)."""
    rows: list[list[Any]] = [
        [100 * (s + 1) + 10 * r + i, region, "active", 10 + s]
        for r, region in enumerate(REGIONS)
        for i in (1, 2)
    ]
    rows.append([1, "eu", f"seen-by-{s}", 10 + s])  # the highest updated_at (the last source) wins
    return rows


def expected_rows(sources: int = SOURCES) -> list[dict[str, Any]]:
    """The target after any number of runs, sorted by ``customer_id``."""
    latest: dict[int, dict[str, Any]] = {}
    for s in range(sources):
        for customer_id, region, status, updated_at in source_rows(s):
            current = latest.get(customer_id)
            if current is None or updated_at >= current["updated_at"]:
                latest[customer_id] = {
                    "customer_id": customer_id,
                    "region": region,
                    "status": status,
                    "updated_at": updated_at,
                }
    return sorted(latest.values(), key=lambda r: r["customer_id"])


@dag(
    dag_id="example_deltacc_clustered_table",
    schedule="@hourly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    max_active_tasks=2,
    tags=["deltacc", "example", "clustering"],
    default_args={"execution_mode": EXECUTION_MODE},
    doc_md=__doc__,
)
def example_deltacc_clustered_table() -> None:
    ingest = staging_append_then_merge(
        group_id="ingest_events",
        sources=[{"kind": "rows", "rows": source_rows(s), "schema": SCHEMA} for s in range(SOURCES)],
        staging_table=STAGING_TABLE,
        target_table=TARGET_TABLE,
        schema=SCHEMA,
        keys=["customer_id"],
        cluster_by=CLUSTER_COLUMNS,  # create_target: CREATE TABLE ... CLUSTER BY (region)
        dedup_order_by="updated_at",
    )
    maintain = table_maintenance(
        group_id="maintain_events",
        table=TARGET_TABLE,
        deferrable=False,
        poll_interval=5,
        gate_wait_timeout=3600,
    )

    @task
    def check_events() -> dict[str, Any]:
        """Read the target with delta-rs (no JVM): clustered by region, every customer once, optimized."""
        from deltalake import DeltaTable

        from airflow_provider_deltacc.contract.table import Table
        from airflow_provider_deltacc.delta_log.table_facts import read_table_facts

        facts = read_table_facts(Table(TARGET_TABLE))
        if facts is None or facts.clustering_columns != tuple(CLUSTER_COLUMNS):
            raise ValueError(f"{TARGET_TABLE} is not clustered by {CLUSTER_COLUMNS}: {facts}")
        target = DeltaTable(TARGET_TABLE)
        rows = sorted(target.to_pyarrow_table().to_pylist(), key=lambda r: r["customer_id"])
        if rows != expected_rows():
            raise ValueError(f"{TARGET_TABLE} is not as merged: {rows}")
        operations = [h.get("operation") for h in target.history()]
        return {"version": target.version(), "rows": len(rows), "operations": operations}

    ingest >> maintain >> check_events()


example_deltacc_clustered_table()
