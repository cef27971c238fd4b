"""Small helpers shared by the engine integration tests."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = "id INT, date DATE, value STRING"


def rows_source(rows: list[list[Any]], schema: str = SCHEMA) -> dict[str, Any]:
    return {"kind": "rows", "rows": rows, "schema": schema}


#: Seed tables written once per test process, keyed by their rows and schema; tests get copies.
_TEMPLATES: dict[tuple[tuple[tuple[Any, ...], ...], str], Path] = {}


def create_table(spark: SparkSession, path: str, rows: list[tuple[Any, ...]], schema: str = SCHEMA) -> None:
    """Create a table partitioned by ``date`` from rows whose dates are ISO strings.

    The first table of given rows and schema is written with ``spark``; every later one is a file copy of it
    (the same log and data files, no Spark job), as the seed is the test's premise, not its subject.
    """
    key = (tuple(rows), schema)
    template = _TEMPLATES.get(key)
    if template is None:
        template = Path(tempfile.mkdtemp(prefix="deltacc-seed-")) / "table"
        atexit.register(shutil.rmtree, template.parent, True)
        frame = spark.createDataFrame(rows, schema.replace("date DATE", "date STRING"))
        frame = frame.withColumn("date", frame["date"].cast("date"))
        frame.coalesce(1).write.format("delta").partitionBy("date").save(str(template))
        _TEMPLATES[key] = template
    shutil.copytree(template, path)


def version(spark: SparkSession, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"])


def history(spark: SparkSession, path: str) -> list[tuple[int, str]]:
    """(version, operation) of every commit, newest first (works on classic and Spark Connect sessions)."""
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return [(int(r["version"]), str(r["operation"])) for r in rows]


def contents(spark: SparkSession, path: str) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(path).collect()
    return sorted((tuple(str(v) if v is not None else None for v in r) for r in rows), key=str)
