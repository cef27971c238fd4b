"""Small helpers shared by the engine integration tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = "id INT, date DATE, value STRING"


def rows_source(rows: list[list[Any]], schema: str = SCHEMA) -> dict[str, Any]:
    return {"kind": "rows", "rows": rows, "schema": schema}


def create_table(spark: SparkSession, path: str, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> None:
    """Create a table partitioned by ``date`` from rows whose dates are ISO strings."""
    frame = spark.createDataFrame(rows, schema.replace("date DATE", "date STRING"))
    frame = frame.withColumn("date", frame["date"].cast("date"))
    frame.coalesce(1).write.format("delta").partitionBy("date").save(path)


def version(spark: SparkSession, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"])


def history(spark: SparkSession, path: str) -> list[tuple[int, str]]:
    """(version, operation) of every commit, newest first (works on classic and Spark Connect sessions)."""
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return [(int(r["version"]), str(r["operation"])) for r in rows]


def contents(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(path).collect()
    return sorted((tuple(str(v) if v is not None else None for v in r) for r in rows), key=str)
