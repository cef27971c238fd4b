"""Concurrent MERGEs into one partitioned Delta table, as mapped tasks.

Several sources land at once, one per ``date`` partition (an upstream task writes small parquet files
with pyarrow, no Spark). One mapped ``DeltaMergeOperator`` per source then merges into the same
``orders`` table at the same time. The merge keys include the partition column, so each MERGE is pinned
to its own partition (quoted literal predicates in its ON condition) and partition-disjoint MERGEs do not
conflict; a conflict with another writer in the same partition (a blind append, say) is classified and
retried from a fresh snapshot inside the job, and by Airflow once the in-job retries are exhausted.

Environment:

``DELTACC_EXAMPLE_ROOT``
    where the example tables and landed files live (default: ``<tmp>/deltacc-examples``); it must be
    visible to the Spark driver and executors (a shared volume, or object storage).
``DELTACC_EXECUTION_MODE``
    ``spark_submit`` (default: a Spark driver per task, through the ``spark_default`` connection),
    ``spark_connect`` (thin tasks on a Spark Connect server, through ``spark_connect_default``) or
    ``in_process``.

Importing this file is cheap: no pyspark, no pyarrow, no deltalake at parse time.
"""

from __future__ import annotations

import os
import tempfile
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
ORDERS_TABLE = f"{EXAMPLE_ROOT}/tables/orders"
LANDING = f"{EXAMPLE_ROOT}/landing"

# How many partitions receive a batch per run (one mapped MERGE each).
PARTITIONS = max(1, min(28, int(os.environ.get("DELTACC_EXAMPLE_PARTITIONS", "4"))))
DATES = [date(2026, 11, 1) + timedelta(days=d) for d in range(PARTITIONS)]
ORDERS_PER_DATE = 3


def seed_rows() -> list[dict[str, Any]]:
    """The table's first content: ``ORDERS_PER_DATE`` open orders per date."""
    return [
        {"order_id": d * 100 + i, "date": day, "amount": 10.0 * (i + 1), "status": "open"}
        for d, day in enumerate(DATES)
        for i in range(ORDERS_PER_DATE)
    ]


def batch_rows(d: int) -> list[dict[str, Any]]:
    """The batch landed for date ``d``: it ships its first order and adds one new order."""
    day = DATES[d]
    return [
        {"order_id": d * 100, "date": day, "amount": 10.0, "status": "shipped"},
        {"order_id": d * 100 + 50, "date": day, "amount": 99.5, "status": "open"},
    ]


def expected_rows() -> list[dict[str, Any]]:
    """Every row of ``orders`` after one run, sorted by ``order_id``."""
    rows = {(r["order_id"], r["date"]): r for r in seed_rows()}
    for d in range(len(DATES)):
        rows.update({(r["order_id"], r["date"]): r for r in batch_rows(d)})
    return sorted(rows.values(), key=lambda r: r["order_id"])


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [("order_id", pa.int64()), ("date", pa.date32()), ("amount", pa.float64()), ("status", pa.string())]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    os.replace(tmp, path)  # readers never see half a file
    return str(path)


@dag(
    dag_id="example_deltacc_concurrent_merges",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # a slow run delays the next one instead of piling up behind it
    max_active_tasks=2,  # two Spark jobs at a time (each a driver JVM in spark_submit), in default_pool
    tags=["deltacc", "example"],
    default_args={"execution_mode": EXECUTION_MODE},  # conn_id: the mode's default connection
    doc_md=__doc__,
)
def example_deltacc_concurrent_merges() -> None:
    @task
    def land_seed() -> str:
        """Write the seed file; the create task appends it exactly once per table."""
        return _write_parquet(seed_rows(), Path(LANDING) / "seed" / "orders.parquet")

    @task
    def land_batches(run_id: str | None = None) -> list[dict[str, Any]]:
        """Land one parquet file per partition and return one MERGE source per file."""
        folder = Path(LANDING) / "batches" / _safe(run_id or "manual")
        return [
            {"kind": "parquet", "path": _write_parquet(batch_rows(d), folder / f"date={day}.parquet")}
            for d, day in enumerate(DATES)
        ]

    create_orders = DeltaAppendOperator(
        task_id="create_orders",
        table=ORDERS_TABLE,
        source=land_seed(),
        partition_by=["date"],
        # One fixed identity: the seed lands once; later runs report a skipped duplicate.
        txn_app_id="example_deltacc_concurrent_merges/create_orders",
        txn_version=1,
    )

    merges = DeltaMergeOperator.partial(
        task_id="merge_batch",
        table=ORDERS_TABLE,
        keys=["order_id", "date"],  # includes the partition column: each MERGE is pinned to its date
        commit_retry={"max_attempts": 5, "min_wait_s": 0.2, "max_wait_s": 5.0},
    ).expand(source=land_batches())

    @task
    def check_orders() -> dict[str, Any]:
        """Read the table with delta-rs (no JVM): every row this DAG wrote is there, exactly once.

        Rows written by other writers of the table (keys this DAG does not own) are counted, not judged.
        """
        from deltalake import DeltaTable

        table = DeltaTable(ORDERS_TABLE)
        expected = {(r["order_id"], r["date"]): r for r in expected_rows()}
        found: dict[tuple[int, date], list[dict[str, Any]]] = {}
        foreign = 0
        for row in table.to_pyarrow_table().to_pylist():
            key = (row["order_id"], row["date"])
            if key in expected:
                found.setdefault(key, []).append(row)
            else:
                foreign += 1
        wrong = {k: v for k, v in found.items() if v != [expected[k]]}
        missing = sorted(set(expected) - set(found))
        if wrong or missing:
            raise ValueError(f"orders is not as merged: missing {missing}, wrong or duplicated {wrong}")
        return {"version": table.version(), "rows": len(expected), "other_writers_rows": foreign}

    create_orders >> merges >> check_orders()


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


example_deltacc_concurrent_merges()
