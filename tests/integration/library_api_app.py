"""A Spark application that writes with the library API, no Airflow: ``python -m
tests.integration.library_api_app (classic | URL) TABLE``.

It creates its own session (a local classic one, or a Spark Connect one with pyspark's builder as an
application does), creates the table, and MERGEs the result of a function that uses ``F.udf`` and a join
with ``conflict_safe_merge``. Prints one line, ``APP_RESULT <json>``: the report's status and whether
Airflow was imported.
"""

from __future__ import annotations

import json
import os
import sys

RESULT_PREFIX = "APP_RESULT "
BALANCES = "account STRING, balance BIGINT"


def main(session: str, table: str) -> None:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F

    from airflow_provider_deltacc.conflict_safe import conflict_safe_merge

    if session == "classic":
        from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

        spark = local_delta_session(app_name="library-api-app")
    else:
        spark = SparkSession.builder.remote(session).getOrCreate()
    spark.createDataFrame([("a", 10), ("b", 20)], BALANCES).write.format("delta").save(table)

    def pay_interest(spark: SparkSession) -> DataFrame:
        rates = spark.createDataFrame([("a", 10), ("b", 50)], "account STRING, percent BIGINT")
        interest = F.udf(lambda balance, percent: balance * percent // 100, "bigint")
        accounts = spark.read.format("delta").load(table)
        return accounts.join(rates, "account").select(
            "account", (F.col("balance") + interest("balance", "percent")).alias("balance")
        )

    report = conflict_safe_merge(
        spark, table, pay_interest, keys=["account"], txn_app_id="interest", txn_version=1
    )
    result = {"status": report.status, "airflow": "airflow" in sys.modules}
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    spark.stop()
    # Leave without interpreter finalization, as the test run does (tests/conftest.py): with a JVM gateway
    # and pyarrow's thread pool in one process it now and then aborts after all is done.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:])
