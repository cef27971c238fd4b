"""A DAG file with one writer task per PySpark family, in the execution mode ``DELTACC_FAMILIES_MODE``,
writing under ``DELTACC_FAMILIES_ROOT``: the families append to ``tables/<family>`` and read their inputs
from ``inputs``.

Parsed by a DagBag as Airflow parses a DAG file (a module no other process can import), so ``dag_file_udf``,
whose UDF is a function of this file, shows that such a UDF reaches Spark's Python workers in every mode.
In ``spark_submit`` mode one decorated writer (``all_families``, given the inputs' folder as a TaskFlow task
is given its arguments) writes every family and ``dag_file_udf``'s rows: one driver instead of one each. In
``spark_connect`` mode one more task, ``client_only``, uses a module only the task process can import.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from airflow.sdk import DAG, task
from pyspark.sql import functions as F

from airflow_provider_deltacc.operators import DeltaAppendOperator
from tests.integration.airflow_face import pyspark_families as families

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MODE = os.environ.get("DELTACC_FAMILIES_MODE", "in_process")
ROOT = Path(os.environ.get("DELTACC_FAMILIES_ROOT", "/tmp/deltacc-pyspark-families"))
DAG_ID = f"deltacc_pyspark_families_{MODE}"


def tier(amount: int) -> int:
    return 2 if amount >= 100 else 1


def dag_file_udf(spark: SparkSession) -> DataFrame:
    """A UDF made of a function of the DAG file itself."""
    tiers = F.udf(tier, "bigint")
    return spark.createDataFrame(families.ORDERS, families.ORDERS_SCHEMA).select(
        "id", tiers("amount").alias("tier")
    )


with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1),
         default_args={"execution_mode": MODE, "retries": 0}) as dag:  # fmt: skip
    if MODE == "spark_submit":  # one driver for every writer, not one each

        @task.delta_append(table=str(ROOT / "tables" / families.ALL_FAMILIES), task_id=families.ALL_FAMILIES)
        def all_families(spark: SparkSession, folder: str) -> DataFrame:
            return families.all_families(spark, folder, {"dag_file_udf": dag_file_udf})

        all_families(folder=str(ROOT / "inputs"))
    else:
        for name, function in families.FAMILIES.items():
            if name == "inputs":  # a decorated writer, given its argument as a TaskFlow task is
                writer = task.delta_append(table=str(ROOT / "tables" / name), task_id=name)(function)
                writer(folder=str(ROOT / "inputs"))
            else:  # a classic writer with the function as its source
                DeltaAppendOperator(task_id=name, table=str(ROOT / "tables" / name), source=function)
        DeltaAppendOperator(
            task_id="dag_file_udf", table=str(ROOT / "tables" / "dag_file_udf"), source=dag_file_udf
        )
    if MODE == "spark_connect":
        DeltaAppendOperator(
            task_id="client_only",
            table=str(ROOT / "tables" / "client_only"),
            source=families.client_only,
            retries=2,  # bad input is never retried: the task fails on its first try
            retry_delay=timedelta(seconds=1),
        )
