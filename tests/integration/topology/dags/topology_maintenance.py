"""Maintenance of the writers' table: OPTIMIZE, then VACUUM, each waiting at the gate (deferred)."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import dag

from airflow_provider_deltacc.operators import DeltaOptimizeOperator, DeltaVacuumOperator
from tests.integration.topology import workload

TABLE = workload.table_path()


@dag(
    dag_id=workload.MAINTENANCE_DAG,
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={
        "execution_mode": "spark_connect",
        "retries": workload.RETRIES,
        "retry_delay": timedelta(seconds=5),
        "lease_ttl": workload.LEASE_TTL_S,
    },
)
def topology_maintenance() -> None:
    optimize = DeltaOptimizeOperator(task_id="optimize", table=TABLE, deferrable=True, poll_interval=2.0)
    vacuum = DeltaVacuumOperator(task_id="vacuum", table=TABLE, deferrable=True, poll_interval=2.0)
    optimize >> vacuum


topology_maintenance()
