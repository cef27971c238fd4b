"""Concurrent writers to one table: mapped appends and mapped, partition-pinned MERGEs over Spark Connect.
One MERGE holds its write on its first try until the test takes its host down (``HeldMergeOperator``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import dag

from airflow_provider_deltacc.operators import DeltaAppendOperator
from tests.integration.topology import workload

TABLE = workload.table_path()


@dag(
    dag_id=workload.WRITERS_DAG,
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_tasks=16,
    default_args={
        "execution_mode": "spark_connect",
        "retries": workload.RETRIES,
        "retry_delay": timedelta(seconds=5),
        "lease_ttl": workload.LEASE_TTL_S,
    },
)
def topology_writers() -> None:
    create = DeltaAppendOperator(
        task_id="create",
        table=TABLE,
        source=workload.inline(workload.seed_rows()),
        partition_by=["part"],
        txn_app_id="topology/create",
        txn_version=1,
    )
    appends = DeltaAppendOperator.partial(task_id="append", table=TABLE).expand(
        source=[workload.inline(workload.append_rows(i)) for i in range(workload.APPENDS)]
    )
    merges = workload.HeldMergeOperator.partial(task_id="merge", table=TABLE, keys=["id", "part"]).expand(
        source=[workload.inline(workload.merge_rows(i)) for i in range(workload.MERGES)]
    )
    create >> [appends, merges]


topology_writers()
