"""OPTIMIZE of the chaos accounts table, deferring at the gate while conflicting transfers hold leases."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import dag

from airflow_provider_deltacc.operators import DeltaOptimizeOperator
from tests.chaos.airflow_faults import CONNECT_CONN_ID, LEASES_CONN_ID, load_plan

PLAN = load_plan()


@dag(
    dag_id="chaos_maintenance",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={
        "execution_mode": "spark_connect",
        "conn_id": CONNECT_CONN_ID,
        "lease_store_conn_id": LEASES_CONN_ID,
        "retries": PLAN["retries"],
        "retry_delay": timedelta(seconds=3),
        "lease_ttl": PLAN["lease_ttl_s"],
    },
)
def chaos_maintenance() -> None:
    DeltaOptimizeOperator(task_id="optimize", table=PLAN["table"], deferrable=True, poll_interval=2.0)


chaos_maintenance()
