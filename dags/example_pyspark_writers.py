"""Your own PySpark code inside the conflict-safe commit loop: decorated writers racing on one table.

``@task.delta_merge`` turns a function of the Spark session into a writer: the function returns the DataFrame
to write, and the provider MERGEs it with everything the operators have (turns, exactly-once identity,
classified retries, the report, the table's asset). Each run:

1. ``open_accounts`` creates the ``accounts`` table once (a fixed txn identity; later runs are answered from
   the Delta log without Spark).
2. ``pay_interest`` (mapped, one task per branch) reads each account's balance *eagerly* (a ``collect()``),
   computes the interest in Python, and MERGEs the new balances. All branches' tasks race on one table; the
   provider makes them take turns and calls the function again on every attempt, so no payment is lost and
   none is applied twice.
3. ``branch_summary`` MERGEs a transform with a join, a window function and a Python UDF into
   ``branch_summary`` (created empty once by ``create_summary``).

Environment: ``DELTACC_EXAMPLE_ROOT`` (where the tables live, default ``<tmp>/deltacc-examples``; the Spark
driver must see it) and ``DELTACC_EXECUTION_MODE`` (``spark_submit`` by default, ``spark_connect`` or
``in_process``). In ``spark_submit`` mode the functions travel to the driver by value.

Importing this file is cheap: no pyspark at parse time (the functions import it when they run).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from airflow.sdk import dag, task

from airflow_provider_deltacc.operators import DeltaAppendOperator

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
ACCOUNTS = f"{EXAMPLE_ROOT}/tables/accounts"
SUMMARY = f"{EXAMPLE_ROOT}/tables/branch_summary"
ACCOUNTS_SCHEMA = "branch STRING, account STRING, balance BIGINT"
SUMMARY_SCHEMA = "branch STRING, region STRING, top_account STRING, top_balance BIGINT, tier STRING"
BRANCHES = ["north", "south", "east"]
#: Interest per run, in basis points of the balance (integer arithmetic: no rounding drift).
INTEREST_BP = 100


def opening_rows() -> list[list[object]]:
    """Two accounts per branch, 10,000 each."""
    return [[branch, f"{branch}-{n}", 10_000] for branch in BRANCHES for n in (1, 2)]


@dag(
    dag_id="example_pyspark_writers",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    max_active_tasks=2,  # at most two Spark tasks at a time, as every example
    default_args={"execution_mode": EXECUTION_MODE},
    tags=["deltacc", "example"],
)
def example_pyspark_writers() -> None:
    open_accounts = DeltaAppendOperator(
        task_id="open_accounts",
        table=ACCOUNTS,
        source={"kind": "rows", "rows": opening_rows(), "schema": ACCOUNTS_SCHEMA},
        txn_app_id="example_pyspark_writers/open",
        txn_version=1,
    )

    # Unpinned on purpose: the interest job reads every account of its branch, so it takes its turn on the
    # whole table instead of racing (the keys hold no partition column).
    @task.delta_merge(table=ACCOUNTS, keys=["account"], when_not_matched=[])
    def pay_interest(spark: SparkSession, branch: str) -> DataFrame:
        table = spark.read.format("delta").load(ACCOUNTS)
        accounts = table.where(table["branch"] == branch).collect()
        rate = 10_000 + INTEREST_BP
        paid = [(a["branch"], a["account"], a["balance"] * rate // 10_000) for a in accounts]
        return spark.createDataFrame(paid, ACCOUNTS_SCHEMA)

    @task.delta_merge(table=SUMMARY, keys=["branch"])
    def branch_summary(spark: SparkSession) -> DataFrame:
        accounts = spark.read.format("delta").load(ACCOUNTS)
        regions = spark.createDataFrame(
            [("north", "eu"), ("south", "eu"), ("east", "apac")], "branch STRING, region STRING"
        )
        spark.udf.register("tier", lambda balance: "gold" if balance >= 10_100 else "standard", "string")
        ranked = accounts.join(regions, "branch").selectExpr(
            "branch",
            "region",
            "account",
            "balance",
            "row_number() OVER (PARTITION BY branch ORDER BY balance DESC, account) AS rank",
        )
        return ranked.where("rank = 1").selectExpr(
            "branch", "region", "account AS top_account", "balance AS top_balance", "tier(balance) AS tier"
        )

    create_summary = DeltaAppendOperator(
        task_id="create_summary",
        table=SUMMARY,
        source={"kind": "rows", "rows": [], "schema": SUMMARY_SCHEMA},
        txn_app_id="example_pyspark_writers/create_summary",
        txn_version=1,
    )
    [open_accounts, create_summary] >> pay_interest.expand(branch=BRANCHES) >> branch_summary()


example_pyspark_writers()
