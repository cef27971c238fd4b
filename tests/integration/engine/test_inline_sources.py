"""Inline ``rows`` sources: built through Arrow, checked like createDataFrame, pinned without a Spark job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import SourceSpec
from airflow_provider_deltacc.engine.pinning import source_partition_values
from airflow_provider_deltacc.engine.sources import load_source, source_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

ATOMIC = (
    "s STRING, b BOOLEAN, y TINYINT, sh SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10,2), "
    "dt DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, bin BINARY"
)
ATOMIC_ROWS: list[list[Any]] = [
    [
        "it's",
        True,
        7,
        300,
        1,
        2**40,
        1.5,
        2.25,
        "12.34",
        "2026-11-20",
        "2026-11-20T10:11:12",
        "2026-11-20T10:11:12.5",
        None,
    ],
    [None] * 13,
]


def _rows(schema: str, rows: list[list[Any]]) -> SourceSpec:
    return SourceSpec(kind="rows", schema=schema, rows=rows)


@pytest.mark.parametrize(
    ("schema", "rows"),
    [
        (ATOMIC, ATOMIC_ROWS),
        # Complex types take createDataFrame's own path; the result must be the same.
        ("id INT, tags ARRAY<STRING>, attrs MAP<STRING, INT>", [[1, ["a", "b"], {"k": 1}]]),
    ],
)
def test_inline_rows_read_back_as_created_by_spark(
    spark: SparkSession, schema: str, rows: list[list[Any]]
) -> None:
    spec = _rows(schema, rows)
    struct, converted = source_rows(spark, spec)
    frame = load_source(spark, spec)
    assert frame.schema == struct
    assert frame.collect() == spark.createDataFrame(converted, struct).collect()


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ([1.5, "a"], "l"),  # a float is not silently truncated into BIGINT
        ([True, "a"], "l"),  # nor a boolean taken for a number
        ([2**70, "a"], "l"),  # out of range
        ([1, 5], "s"),  # a number is not a string
    ],
)
def test_rows_that_do_not_fit_the_schema_are_refused(
    spark: SparkSession, row: list[Any], column: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_source(spark, _rows("l BIGINT, s STRING", [row]))
    assert caught.value.field == "source.rows"
    assert "do not match the schema" in str(caught.value)


@pytest.mark.classic_session  # counts the Spark jobs of a job group, which only a classic session can
def test_inline_partition_values_need_no_spark_job(spark: SparkSession) -> None:
    spec = _rows(
        "day DATE, region STRING, amount DECIMAL(8,2), id BIGINT",
        [["2026-11-20", "eu", "1.50", 1], ["2026-11-21", "us", "2.00", 2], ["2026-11-20", "eu", "3.00", 3]],
    )
    frame = load_source(spark, spec)
    collected = source_partition_values(frame, ["DAY", "Region"], max_values=10)
    spark.sparkContext.setJobGroup("inline-pin", "inline-pin")
    try:
        rows = source_rows(spark, spec)
        inline = source_partition_values(frame, ["DAY", "Region"], max_values=10, inline=rows)
        assert spark.sparkContext.statusTracker().getJobIdsForGroup("inline-pin") == []
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sorted(inline, key=str) == sorted(collected, key=str)
    assert {tuple(v.values()) for v in inline} == {(r["DAY"], r["Region"]) for r in collected}

    with pytest.raises(InputError, match="more than 1 distinct partitions"):
        source_partition_values(frame, ["day"], max_values=1, inline=source_rows(spark, spec))


@pytest.mark.classic_session  # counts the Spark jobs of a job group, which only a classic session can
def test_float_and_timestamp_pins_still_collect(spark: SparkSession) -> None:
    spec = _rows(
        "x DOUBLE, ts TIMESTAMP",
        [[float("nan"), "2026-11-20T10:00:00"], [float("nan"), "2026-11-20T10:00:00"]],
    )
    frame = load_source(spark, spec)
    spark.sparkContext.setJobGroup("float-pin", "float-pin")
    try:
        values = source_partition_values(frame, ["x", "ts"], max_values=10, inline=source_rows(spark, spec))
        assert spark.sparkContext.statusTracker().getJobIdsForGroup("float-pin") != []
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert len(values) == 1  # Spark's distinct treats NaN as one value
