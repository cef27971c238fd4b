"""The PySpark a real pipeline uses, one source function per family, with the rows each one writes.

Module-level functions, so that they travel to a ``spark_submit`` driver like a DAG file's own. Each builds
its DataFrame from tiny inputs, the way pipeline code does: ``pyspark.sql.functions`` imported as ``F``,
UDFs made inside the function, values collected on the driver. :data:`EXPECTED` holds the exact rows each
writes, as delta-rs reads them back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import Row, Window
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf, udf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ORDERS = [(1, "c1", 50, None), (2, "c1", 150, "promo"), (3, "c2", 70, None), (4, "c3", 20, "vip")]
ORDERS_SCHEMA = "id BIGINT, customer STRING, amount BIGINT, tag STRING"
CUSTOMERS = [("c1", "eu"), ("c2", "us"), ("c3", "eu")]
#: The module a source function's UDF uses that only the Airflow worker can import (see ``client_only``).
CLIENT_ONLY_MODULE = "deltacc_client_only_helpers"
#: The task and table of :func:`all_families` (``spark_submit`` mode).
ALL_FAMILIES = "all_families"


def _orders(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(ORDERS, ORDERS_SCHEMA)


def column_functions(spark: SparkSession) -> DataFrame:
    """``col``, ``lit``, ``when``, ``coalesce``, ``expr`` and aggregates with ``groupBy().agg``."""
    shaped = _orders(spark).select(
        F.col("customer"),
        (F.col("amount") + F.lit(1)).alias("amount"),
        F.when(F.col("amount") >= 100, "big").otherwise("small").alias("band"),
        F.coalesce(F.col("tag"), F.lit("none")).alias("tag"),
        F.expr("amount * 2").alias("doubled"),
    )
    return shaped.groupBy("customer").agg(
        F.sum("amount").alias("total"),
        F.count(F.lit(1)).alias("orders"),
        F.max("band").alias("top_band"),
        F.concat_ws(",", F.sort_array(F.collect_set("tag"))).alias("tags"),
        F.sum("doubled").alias("doubled"),
    )


def window_functions(spark: SparkSession) -> DataFrame:
    """``Window.partitionBy(...).orderBy(...)`` with ``row_number``, ``lag`` and a running sum."""
    by_customer = Window.partitionBy("customer").orderBy("id")
    return _orders(spark).select(
        "id",
        "customer",
        F.row_number().over(by_customer).alias("nth"),
        F.lag("amount", 1).over(by_customer).alias("previous"),
        F.sum("amount").over(by_customer).alias("running"),
    )


def python_udfs(spark: SparkSession) -> DataFrame:
    """Python UDFs: ``F.udf``, the ``@udf`` decorator, and ``spark.udf.register`` used from SQL.

    They return numbers: over Spark Connect a string type the client builds (a Python UDF's string result, a
    string column of a ``mapInPandas``/``applyInPandas`` schema) reaches the server as ``string collate
    UTF8_BINARY``, which Delta writes into the table's schema as such and delta-rs cannot read (a finding
    left for an issue of its own)."""
    plus_one = F.udf(lambda amount: amount + 1, "bigint")

    @udf(returnType="bigint")
    def big(amount: int) -> int:
        return 1 if amount >= 100 else 0

    spark.udf.register("number", lambda customer: int(customer[1:]), "bigint")
    flagged = _orders(spark).select(
        "id", "customer", plus_one("amount").alias("next"), big("amount").alias("big")
    )
    return flagged.selectExpr("id", "next", "big", "number(customer) AS customer_no")


def pandas_functions(spark: SparkSession) -> DataFrame:
    """A pandas UDF, ``mapInPandas`` and ``groupBy().applyInPandas`` (pandas and pyarrow in the workers)."""

    @pandas_udf("bigint")
    def cents(amount: pd.Series) -> pd.Series:
        # pd named in the code, not only in the hints pyspark reads: a spark_submit driver gets this
        # function by value, with the module globals its code names.
        return pd.Series(amount * 100)

    def taxed(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            yield batch.assign(amount=batch["amount"] + batch["amount"] // 10)[["id", "customer", "amount"]]

    def share(group: pd.DataFrame) -> pd.DataFrame:
        return group[["id", "amount"]].assign(share=group["amount"] * 100 // group["amount"].sum())

    frame = _orders(spark).mapInPandas(taxed, "id BIGINT, customer STRING, amount BIGINT")
    # No string column in what is written (see python_udfs): its type would come from the client.
    frame = frame.groupBy("customer").applyInPandas(share, "id BIGINT, amount BIGINT, share BIGINT")
    return frame.withColumn("cents", cents("amount"))


def relational(spark: SparkSession) -> DataFrame:
    """A broadcast-hint join, ``DataFrame.transform``, a temp view queried with ``spark.sql``, ``cache()``."""
    customers = spark.createDataFrame(CUSTOMERS, "customer STRING, region STRING")

    def with_region(frame: DataFrame) -> DataFrame:
        return frame.join(F.broadcast(customers), "customer")

    def at_least(frame: DataFrame, floor: int) -> DataFrame:
        return frame.where(F.col("amount") >= floor)

    regional = _orders(spark).transform(with_region).transform(at_least, 50).cache()
    counted = regional.count()
    regional.createOrReplaceTempView("regional_orders")
    totals = spark.sql(
        "SELECT region, SUM(amount) AS total, COUNT(*) AS orders FROM regional_orders GROUP BY region"
    )
    return totals.join(customers.hint("broadcast").groupBy("region").count(), "region").select(
        "region", "total", "orders", F.col("count").alias("customers"), F.lit(counted).alias("of_all")
    )


def inputs(spark: SparkSession, folder: str) -> DataFrame:
    """Reads of parquet, JSON and CSV files; ``createDataFrame`` from rows and from a pandas frame; eager
    ``collect()`` and ``toPandas()``.

    :param folder: where :func:`write_inputs` left the files.
    """
    orders = spark.read.parquet(f"{folder}/orders.parquet")
    customers = spark.read.schema("customer STRING, region STRING").json(f"{folder}/customers.json")
    rates = spark.read.option("header", True).schema("region STRING, rate BIGINT").csv(f"{folder}/rates.csv")
    labels = spark.createDataFrame([Row(region="eu", label="Europe"), Row(region="us", label="Americas")])
    flags = spark.createDataFrame(pd.DataFrame({"customer": ["c1", "c2", "c3"], "vip": [True, False, False]}))
    top_rate = max(row["rate"] for row in rates.collect())
    vips = sorted(flags.toPandas().query("vip")["customer"])
    joined = orders.join(customers, "customer").join(labels, "region").join(rates, "region")
    return joined.select(
        "id",
        "label",
        (F.col("amount") * F.col("rate")).alias("charged"),
        F.col("customer").isin(vips).alias("vip"),
        (F.col("rate") == F.lit(top_rate)).alias("top_rate"),
    )


def client_only(spark: SparkSession) -> DataFrame:
    """A UDF using a module that only the Airflow worker can import: a Spark Connect server's Python workers
    cannot load it."""
    import deltacc_client_only_helpers as helpers  # type: ignore[import-not-found]

    scaled = F.udf(lambda amount: helpers.scale(amount), "bigint")
    return _orders(spark).select("id", scaled("amount").alias("amount"))


def all_families(
    spark: SparkSession, folder: str, more: Mapping[str, Callable[[SparkSession], DataFrame]]
) -> DataFrame:
    """Every family, and each frame ``more`` builds, in one source function, each row as JSON beside its
    family's name: what a ``spark_submit`` run writes, one driver for them all instead of one each (a driver
    is the costly part of that mode; the families' code runs in it all the same).

    :param folder: where :func:`write_inputs` left the files ``inputs`` reads.
    :param more: frames to write beside the families, by name (the DAG file's own UDF).
    """
    frames = {
        name: family(spark, folder) if name == "inputs" else family(spark)
        for name, family in FAMILIES.items()
    }
    frames.update((name, build(spark)) for name, build in more.items())
    tagged = [
        frame.select(
            F.lit(name).alias("family"),
            F.to_json(F.struct(*frame.columns), {"ignoreNullFields": "false"}).alias("row"),
        )
        for name, frame in frames.items()
    ]
    return functools.reduce(lambda left, right: left.unionByName(right), tagged)


def write_inputs(folder: Path) -> None:
    """The files :func:`inputs` reads, written without Spark."""
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {"id": [1, 2, 3, 4], "customer": ["c1", "c1", "c2", "c3"], "amount": [50, 150, 70, 20]}
    ).to_parquet(folder / "orders.parquet")
    pd.DataFrame(CUSTOMERS, columns=["customer", "region"]).to_json(
        folder / "customers.json", orient="records", lines=True
    )
    (folder / "rates.csv").write_text("region,rate\neu,2\nus,3\n")


def write_client_only_module(folder: Path) -> None:
    """:data:`CLIENT_ONLY_MODULE`, in ``folder`` (a path only the Airflow task process is given)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{CLIENT_ONLY_MODULE}.py").write_text("def scale(amount):\n    return amount * 10\n")


#: Each family's source function by name (``inputs`` is given ``folder``), and the rows each one writes.
FAMILIES: dict[str, Callable[..., DataFrame]] = {
    "column_functions": column_functions,
    "window_functions": window_functions,
    "python_udfs": python_udfs,
    "pandas_functions": pandas_functions,
    "relational": relational,
    "inputs": inputs,
}

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "column_functions": [
        {
            "customer": "c1",
            "total": 202,
            "orders": 2,
            "top_band": "small",
            "tags": "none,promo",
            "doubled": 400,
        },
        {"customer": "c2", "total": 71, "orders": 1, "top_band": "small", "tags": "none", "doubled": 140},
        {"customer": "c3", "total": 21, "orders": 1, "top_band": "small", "tags": "vip", "doubled": 40},
    ],
    "window_functions": [
        {"id": 1, "customer": "c1", "nth": 1, "previous": None, "running": 50},
        {"id": 2, "customer": "c1", "nth": 2, "previous": 50, "running": 200},
        {"id": 3, "customer": "c2", "nth": 1, "previous": None, "running": 70},
        {"id": 4, "customer": "c3", "nth": 1, "previous": None, "running": 20},
    ],
    "python_udfs": [
        {"id": 1, "next": 51, "big": 0, "customer_no": 1},
        {"id": 2, "next": 151, "big": 1, "customer_no": 1},
        {"id": 3, "next": 71, "big": 0, "customer_no": 2},
        {"id": 4, "next": 21, "big": 0, "customer_no": 3},
    ],
    "pandas_functions": [
        {"id": 1, "amount": 55, "share": 25, "cents": 5500},
        {"id": 2, "amount": 165, "share": 75, "cents": 16500},
        {"id": 3, "amount": 77, "share": 100, "cents": 7700},
        {"id": 4, "amount": 22, "share": 100, "cents": 2200},
    ],
    "relational": [
        {"region": "eu", "total": 200, "orders": 2, "customers": 2, "of_all": 3},
        {"region": "us", "total": 70, "orders": 1, "customers": 1, "of_all": 3},
    ],
    "inputs": [
        {"id": 1, "label": "Europe", "charged": 100, "vip": True, "top_rate": False},
        {"id": 2, "label": "Europe", "charged": 300, "vip": True, "top_rate": False},
        {"id": 3, "label": "Americas", "charged": 210, "vip": False, "top_rate": True},
        {"id": 4, "label": "Europe", "charged": 40, "vip": False, "top_rate": False},
    ],
}
