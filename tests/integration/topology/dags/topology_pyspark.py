"""PySpark-decorated writers racing on one balance, in every execution mode: each task reads the balance
eagerly (a ``collect()``) and MERGEs it back plus its amount, written as pipeline code is: columns of
``pyspark.sql.functions``, a join and a Python UDF (which over Spark Connect runs in the server's Python
workers). Exactly the sum of the amounts is left only when no attempt reuses a value read before its turn,
and every task commits exactly once."""

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
        from pyspark.sql import functions as F

        row = spark.read.format("delta").load(BALANCES).where(F.col("account") == F.lit("a")).collect()[0]
        current = spark.createDataFrame([("a", row["balance"])], "account STRING, balance BIGINT")
        deposit = spark.createDataFrame([("a", amount)], "account STRING, amount BIGINT")
        added = F.udf(lambda balance, amount: balance + amount, "bigint")
        return current.join(deposit, "account").select("account", added("balance", "amount").alias("balance"))

    for mode, amounts in workload.PYSPARK_AMOUNTS.items():
        opened >> add.override(task_id=f"add_{mode}", execution_mode=mode).expand(amount=list(amounts))


topology_pyspark()
