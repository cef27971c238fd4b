"""Shared set-up for the benchmarks: a local Delta session and a partitioned (or clustered) table."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DELTACC_JAR_CACHE", str(ROOT / ".cache" / "jars"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

SCHEMA = "id INT, part STRING, value INT, writer STRING"


def mode_hook(
    mode: str, *, job_name: str, submit_conn: str, connect_conn: str, aws_conn_id: str | None = None
) -> Any:
    """A ``DeltaCCHook`` for ``mode`` (``spark_submit`` through ``submit_conn``, ``spark_connect`` through
    ``connect_conn``, or ``in_process``) with a 1 GB driver, as the benches compare the modes."""
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

    conn_id = {"spark_submit": submit_conn, "spark_connect": connect_conn, "in_process": None}[mode]
    return DeltaCCHook(
        conn_id=conn_id,
        execution_mode=mode,  # type: ignore[arg-type]
        job_name=job_name,
        submit_options={"driver_memory": "1g"},
        aws_conn_id=aws_conn_id,
    )


def session(app_name: str) -> Any:
    from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

    return local_delta_session(app_name=app_name)


def create_table(spark: Any, path: str, partitions: int, rows_per_partition: int = 20) -> None:
    rows = [(p * 1000 + i, f"p{p}", 0, "seed") for p in range(partitions) for i in range(rows_per_partition)]
    spark.createDataFrame(rows, SCHEMA).write.format("delta").partitionBy("part").mode("overwrite").save(path)


def create_clustered_table(spark: Any, path: str, partitions: int, rows_per_partition: int = 20) -> None:
    """The same rows in a table liquid-clustered by ``part`` (no partitions), one file per ``part``."""
    spark.sql(f"CREATE TABLE delta.`{path}` ({SCHEMA}) USING delta CLUSTER BY (part)")
    for p in range(partitions):
        rows = [(p * 1000 + i, f"p{p}", 0, "seed") for i in range(rows_per_partition)]
        spark.createDataFrame(rows, SCHEMA).coalesce(1).write.format("delta").mode("append").save(path)


def merge_rows(partition: int, version: int, rows_per_partition: int = 20) -> list[list[Any]]:
    part, writer = f"p{partition}", f"w{partition}"
    return [[partition * 1000 + i, part, version, writer] for i in range(rows_per_partition + 1)]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def now() -> float:
    return time.perf_counter()
