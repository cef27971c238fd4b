"""A scheduled ingestion pipeline: several sources land at once through staging-append-then-merge.

Every run, ``SOURCES`` upstream systems (web shop, stores, a partner feed, ...) each deliver a small batch
of order updates as a parquet file (written with pyarrow, no Spark). Their batches overlap: the same order
can arrive from two systems with different ``updated_at``. Instead of N concurrent MERGEs into ``orders``
(which conflict whenever they touch the same partitions), the
:func:`~airflow_provider_deltacc.task_groups.staging_append_then_merge` group appends every batch to a
staging table (blind appends never conflict), then runs ONE MERGE of this run's batches, de-duplicated to
the latest ``updated_at`` per order and pinned to the dates they touch, then deletes exactly those
batches from staging. Every step is exactly-once: retrying any task never duplicates or loses a row.

Environment:

``DELTACC_EXAMPLE_ROOT``
    where the example tables and landed files live (default: ``<tmp>/deltacc-examples``); it must be
    visible to the Spark driver and executors.
``DELTACC_EXECUTION_MODE``
    ``spark_submit`` (default: a Spark driver per task, through the ``spark_default`` connection),
    ``spark_connect`` (thin tasks on a Spark Connect server, through ``spark_connect_default``) or
    ``in_process``.
``DELTACC_EXAMPLE_SOURCES``
    how many sources land per run (default 3, at most 8).

Importing this file is cheap: no pyspark, no pyarrow, no deltalake at parse time.
"""

from __future__ import annotations

import os
import tempfile
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.task_groups import staging_append_then_merge

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
TARGET_TABLE = f"{EXAMPLE_ROOT}/tables/ingested_orders"
STAGING_TABLE = f"{EXAMPLE_ROOT}/tables/ingested_orders_staging"
LANDING = f"{EXAMPLE_ROOT}/landing/ingestion"
SCHEMA = "order_id BIGINT, date DATE, status STRING, amount DOUBLE, source STRING, updated_at BIGINT"

SOURCES = max(1, min(8, int(os.environ.get("DELTACC_EXAMPLE_SOURCES", "3"))))
DATES = [date(2026, 11, 1) + timedelta(days=d) for d in range(2)]


def source_rows(s: int) -> list[dict[str, Any]]:
    """Source ``s``'s batch: two orders of its own on each date, and order 1 (shared by every source)."""
    rows = [
        {
            "order_id": 1000 * (s + 1) + 10 * d + i,
            "date": day,
            "status": "open",
            "amount": float(10 * (s + 1) + i),
            "source": f"source-{s}",
            "updated_at": 100 + s,
        }
        for d, day in enumerate(DATES)
        for i in range(2)
    ]
    # Every source reports order 1; the one with the highest updated_at (the last source) wins.
    rows.append(
        {
            "order_id": 1,
            "date": DATES[0],
            "status": f"seen-by-{s}",
            "amount": 1.0,
            "source": f"source-{s}",
            "updated_at": 100 + s,
        }
    )
    return rows


def expected_rows(sources: int = SOURCES) -> list[dict[str, Any]]:
    """Every row of the target after any number of runs, sorted by ``order_id``."""
    latest: dict[int, dict[str, Any]] = {}
    for s in range(sources):
        for row in source_rows(s):
            current = latest.get(row["order_id"])
            if current is None or row["updated_at"] >= current["updated_at"]:
                latest[row["order_id"]] = row
    return sorted(latest.values(), key=lambda r: r["order_id"])


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("order_id", pa.int64()),
            ("date", pa.date32()),
            ("status", pa.string()),
            ("amount", pa.float64()),
            ("source", pa.string()),
            ("updated_at", pa.int64()),
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    os.replace(tmp, path)  # readers never see half a file
    return str(path)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


@dag(
    dag_id="example_deltacc_ingestion_staging",
    schedule="@hourly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    # Runs never pile up; overlapping runs would be safe too (each merges and cleans up only its own batches).
    max_active_runs=1,
    max_active_tasks=2,  # two Spark jobs at a time (each a driver JVM in spark_submit), in default_pool
    tags=["deltacc", "example"],
    default_args={"execution_mode": EXECUTION_MODE},  # conn_id: the mode's default connection
    doc_md=__doc__,
)
def example_deltacc_ingestion_staging() -> None:
    @task
    def land_sources(run_id: str | None = None) -> list[dict[str, Any]]:
        """Each source system delivers one parquet file; return one append source per file."""
        folder = Path(LANDING) / _safe(run_id or "manual")
        return [
            {"kind": "parquet", "path": _write_parquet(source_rows(s), folder / f"source-{s}.parquet")}
            for s in range(SOURCES)
        ]

    ingest = staging_append_then_merge(
        group_id="ingest_orders",
        sources=land_sources(),
        staging_table=STAGING_TABLE,
        target_table=TARGET_TABLE,
        schema=SCHEMA,
        keys=["order_id", "date"],  # the partition column is a key: the MERGE is pinned to its dates
        partition_by=["date"],
        dedup_order_by="updated_at",  # latest wins, within the run and against the target
        merge_commit_retry={"max_attempts": 5, "min_wait_s": 0.2, "max_wait_s": 5.0},
    )

    @task
    def check_orders() -> dict[str, Any]:
        """Read both tables with delta-rs (no JVM): the target holds every order once, at its latest state,
        and staging holds no batch of this run."""
        from deltalake import DeltaTable

        target = DeltaTable(TARGET_TABLE)
        rows = sorted(target.to_pyarrow_table().to_pylist(), key=lambda r: r["order_id"])
        if rows != expected_rows():
            raise ValueError(f"{TARGET_TABLE} is not as merged: {rows}")
        staged = DeltaTable(STAGING_TABLE).to_pyarrow_table(columns=["batch_id"]).num_rows
        return {"version": target.version(), "rows": len(rows), "staged_rows_left": staged}

    ingest >> check_orders()


example_deltacc_ingestion_staging()
