"""Concurrent writers on a Delta table in S3, with credentials from an Airflow ``aws`` connection.

Four mapped appends land batches in one ``s3a://`` table at once, then OPTIMIZE compacts it and a check
reads it back with delta-rs. Delta's default S3 log store cannot keep two Spark drivers from overwriting
each other's commit (see docs/object-storage.md), so the provider's storage guard gives each writer an
exclusive lease on the table: they queue, and every batch lands exactly once. ``aws_conn_id`` carries the
connection's keys, region and endpoint to Spark (``fs.s3a.*``, set on the job's session, never on a command
line) and to every delta-rs read.

Environment:

``DELTACC_S3_TABLE``
    the table (default ``s3a://lake/deltacc-examples/events``; the bucket must exist).
``DELTACC_AWS_CONN_ID``
    the ``aws`` connection (default ``deltacc_s3``: the S3 API of docker/docker-compose.yml).
``DELTACC_EXECUTION_MODE``
    ``spark_submit`` (default), ``spark_connect`` or ``in_process``.

Importing this file is cheap: no pyspark, no deltalake at parse time.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator

S3_TABLE = os.environ.get("DELTACC_S3_TABLE", "s3a://lake/deltacc-examples/events")
AWS_CONN_ID = os.environ.get("DELTACC_AWS_CONN_ID", "deltacc_s3")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
SCHEMA = "event_id BIGINT, batch INT, kind STRING"
BATCHES = 4
EVENTS_PER_BATCH = 3


def batch_source(batch: int) -> dict[str, Any]:
    """One batch of events, inline (a real pipeline would name a landed parquet path or a table)."""
    rows = [[batch * 100 + i, batch, "click"] for i in range(EVENTS_PER_BATCH)]
    return {"kind": "rows", "rows": rows, "schema": SCHEMA}


@dag(
    dag_id="example_deltacc_s3_writers",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    max_active_tasks=2,  # two Spark jobs at a time (each a driver JVM in spark_submit), in default_pool
    tags=["deltacc", "example", "s3"],
    default_args={"execution_mode": EXECUTION_MODE, "aws_conn_id": AWS_CONN_ID},
    doc_md=__doc__,
)
def example_deltacc_s3_writers() -> None:
    appends = DeltaAppendOperator.partial(
        task_id="append_batch",
        table=S3_TABLE,
        create_if_missing=True,
        # The writers queue for the table (one exclusive lease at a time): wait up to 10 minutes.
        unsafe_storage_wait_timeout=600.0,
    ).expand(source=[batch_source(b) for b in range(BATCHES)])

    optimize = DeltaOptimizeOperator(task_id="optimize", table=S3_TABLE, deferrable=False, poll_interval=5.0)

    @task
    def check_events() -> dict[str, Any]:
        """Read the table with delta-rs through the same connection: every batch is there exactly once."""
        from deltalake import DeltaTable

        from airflow_provider_deltacc.object_storage.connections import storage_options_for

        table = DeltaTable(
            S3_TABLE.replace("s3a://", "s3://", 1), storage_options=storage_options_for(AWS_CONN_ID)
        )
        ids = sorted(row["event_id"] for row in table.to_pyarrow_table().to_pylist())
        expected = sorted(b * 100 + i for b in range(BATCHES) for i in range(EVENTS_PER_BATCH))
        if ids != expected:
            raise ValueError(f"{S3_TABLE} is not as written: expected event ids {expected}, found {ids}")
        return {"version": table.version(), "events": len(ids)}

    appends >> optimize >> check_events()


example_deltacc_s3_writers()
