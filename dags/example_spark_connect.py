"""Thin tasks on a Spark Connect server: mapped appends and one pinned MERGE into one table.

Every Delta task of this DAG runs with ``execution_mode="spark_connect"`` (set in ``default_args``, not
through the environment): the OCC commit loop runs in the Airflow worker, and each Delta operation goes to
a long-lived Spark Connect server as SQL and DataFrame calls, in a Connect session of the task's own. No
task starts a JVM; a task costs what its SQL costs on a server that is already warm.

Each run:

1. ``create_orders`` creates the partitioned ``connect_orders`` table on the first run (one fixed txn
   identity); later runs are answered from the Delta log with delta-rs and never reach the server.
2. ``append_batch`` (mapped, one instance per source) blind-appends this run's batches; blind appends
   never conflict with each other.
3. ``ship_orders`` MERGEs this run's shipments. Its keys include the partition column ``date``, so the
   MERGE is pinned to the one date it touches (a literal predicate in its ON clause).
4. ``check_orders`` reads the table with delta-rs (no Spark): this run's orders are there exactly once,
   shipped where the MERGE shipped them.

To run it:

- start a Connect server with the Delta jars: ``deltacc-connect-server --host 0.0.0.0 --port 15002``
  (Java, pyspark and the provider's jar cache on that machine), or the ``spark-connect`` service of
  ``docker/docker-compose.yml``;
- point the ``spark_connect_default`` connection at it:
  ``AIRFLOW_CONN_SPARK_CONNECT_DEFAULT='spark-connect://<host>:15002'``;
- install ``airflow-provider-deltacc[connect]`` where the tasks run (pyspark's Connect client);
- set ``DELTACC_EXAMPLE_ROOT`` (as for the other examples) to a folder the server and the Airflow workers
  both see, and trigger the DAG.

Importing this file is cheap: no pyspark, no deltalake at parse time.
"""

from __future__ import annotations

import os
import tempfile
from datetime import date, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.task_groups.staging import create_identity

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
ORDERS_TABLE = f"{EXAMPLE_ROOT}/tables/connect_orders"
SCHEMA = "run_id STRING, order_id BIGINT, date DATE, source STRING, status STRING"
SOURCES = 3
DATES = [date(2026, 11, 1), date(2026, 11, 2)]
SHIP_DATE = DATES[0]
LATE_ORDER_ID = 999


def batch_rows(run_id: str, s: int) -> list[dict[str, Any]]:
    """Source ``s``'s batch in run ``run_id``: one open order on each date."""
    return [
        {"run_id": run_id, "order_id": 10 * s + d, "date": day, "source": f"source-{s}", "status": "open"}
        for d, day in enumerate(DATES)
    ]


def shipment_rows(run_id: str) -> list[dict[str, Any]]:
    """The run's shipments, all on ``SHIP_DATE``: every order of that date, and a late order not yet
    appended (the MERGE inserts it)."""
    shipped = [
        {**row, "status": "shipped"}
        for s in range(SOURCES)
        for row in batch_rows(run_id, s)
        if row["date"] == SHIP_DATE
    ]
    late = {
        "run_id": run_id,
        "order_id": LATE_ORDER_ID,
        "date": SHIP_DATE,
        "source": "late",
        "status": "shipped",
    }
    return [*shipped, late]


def expected_rows(run_id: str) -> list[dict[str, Any]]:
    """The table's rows of run ``run_id`` after the run, sorted by ``order_id``."""
    rows = {(r["order_id"], r["date"]): r for s in range(SOURCES) for r in batch_rows(run_id, s)}
    rows.update({(r["order_id"], r["date"]): r for r in shipment_rows(run_id)})
    return sorted(rows.values(), key=lambda r: (r["order_id"], r["date"]))


def _inline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """An inline-rows source: the rows travel in the job spec, no files to land."""
    return {"kind": "rows", "rows": [{**r, "date": r["date"].isoformat()} for r in rows], "schema": SCHEMA}


@dag(
    dag_id="example_deltacc_spark_connect",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # a slow run delays the next one instead of piling up behind it
    max_active_tasks=4,  # thin tasks: the server does the work; four Connect sessions at a time
    tags=["deltacc", "example", "spark_connect"],
    default_args={"execution_mode": "spark_connect", "conn_id": "spark_connect_default"},
    doc_md=__doc__,
)
def example_deltacc_spark_connect() -> None:
    create_orders = DeltaAppendOperator(
        task_id="create_orders",
        table=ORDERS_TABLE,
        source={"kind": "rows", "rows": [], "schema": SCHEMA},
        partition_by=["date"],
        # One fixed identity: created once; later runs are answered from the Delta log without Spark.
        txn_app_id=create_identity(ORDERS_TABLE),
        txn_version=1,
    )

    @task
    def batches(run_id: str | None = None) -> list[dict[str, Any]]:
        """One inline source per source system, for this run."""
        return [_inline(batch_rows(run_id or "manual", s)) for s in range(SOURCES)]

    @task
    def shipments(run_id: str | None = None) -> dict[str, Any]:
        """This run's shipments, as one inline source."""
        return _inline(shipment_rows(run_id or "manual"))

    appends = DeltaAppendOperator.partial(task_id="append_batch", table=ORDERS_TABLE).expand(source=batches())
    ship_orders = DeltaMergeOperator(
        task_id="ship_orders",
        table=ORDERS_TABLE,
        source=shipments(),
        keys=["run_id", "order_id", "date"],  # includes the partition column: pinned to SHIP_DATE
    )

    @task
    def check_orders(run_id: str | None = None, ti: Any = None) -> dict[str, Any]:
        """Read the table with delta-rs (no JVM): this run's orders, exactly once, shipped by the MERGE."""
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        table = DeltaTable(ORDERS_TABLE)
        data = table.to_pyarrow_table()
        mine = data.filter(pc.equal(data["run_id"], run_id or "manual")).to_pylist()
        rows = sorted(mine, key=lambda r: (r["order_id"], r["date"]))
        if rows != expected_rows(run_id or "manual"):
            raise ValueError(f"{ORDERS_TABLE} does not hold this run's orders exactly once: {rows}")
        merge = ti.xcom_pull(task_ids="ship_orders", key=REPORT_XCOM_KEY)
        return {
            "version": table.version(),
            "rows": len(rows),
            "runs_in_table": len(set(data["run_id"].to_pylist())),
            "merge_partition_pin": merge["metrics"].get("partition_pin"),
        }

    create_orders >> appends >> ship_orders >> check_orders()


example_deltacc_spark_connect()
