"""PySpark-decorated writers racing on one balance, in every execution mode: each task reads the balance
eagerly (a ``collect()``) and MERGEs it back plus its amount. Exactly the sum of the amounts is left only
when no attempt reuses a value read before its turn, and every task commits exactly once."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from airflow.sdk import dag, task

from airflow_provider_deltacc.operators import DeltaAppendOperator
from tests.integration.topology import workload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BALANCES = workload.balances_path()


@dag(
    dag_id=workload.PYSPARK_DAG,
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_tasks=16,
    default_args={
        "retries": workload.RETRIES,
        "retry_delay": timedelta(seconds=5),
        "lease_ttl": workload.LEASE_TTL_S,
    },
)
def topology_pyspark() -> None:
    opened = DeltaAppendOperator(
        task_id="open",
        table=BALANCES,
        source={"kind": "rows", "rows": [["a", 0]], "schema": workload.BALANCE_SCHEMA},
        txn_app_id="topology/open",
        txn_version=1,
        execution_mode="spark_connect",
    )

    @task.delta_merge(table=BALANCES, keys=["account"])
    def add(spark: SparkSession, amount: int) -> DataFrame:
        row = spark.read.format("delta").load(BALANCES).where("account = 'a'").collect()[0]
        return spark.createDataFrame([("a", row["balance"] + amount)], "account STRING, balance BIGINT")

    for mode, amounts in workload.PYSPARK_AMOUNTS.items():
        opened >> add.override(task_id=f"add_{mode}", execution_mode=mode).expand(amount=list(amounts))


topology_pyspark()
