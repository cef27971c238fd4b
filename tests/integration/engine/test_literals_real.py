"""Quoted literals keep their meaning on a real table: hostile strings match only themselves."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.literals import sql_literal
from airflow_provider_deltacc.engine.literals import escaped_string_literals
from airflow_provider_deltacc.spark_job.main import run_job

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

HOSTILE = ["x' OR '1'='1", "x", "back\\slash'", "${env:DELTACC_LITERAL_SECRET}", "s3cr3t"]


def test_hostile_values_only_match_themselves(
    spark: SparkSession, table_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DELTACC_LITERAL_SECRET", "s3cr3t")
    rows = [(i, value, value) for i, value in enumerate(HOSTILE)]
    spark.createDataFrame(rows, "id INT, part STRING, value STRING").write.format("delta").partitionBy(
        "part"
    ).save(table_path)
    assert not escaped_string_literals(spark)
    for value in HOSTILE:
        literal = sql_literal(value, "string")
        matched = spark.read.format("delta").load(table_path).where(f"value = {literal}").collect()
        assert [r["value"] for r in matched] == [value], (value, literal)
    assert os.environ["DELTACC_LITERAL_SECRET"] == "s3cr3t"

    code, report = run_job(
        {
            "operation": "delete",
            "table": table_path,
            "options": {
                "equals": {"value": "x' OR '1'='1"},
                "partition_values": [{"part": "x' OR '1'='1"}, {"part": "${env:DELTACC_LITERAL_SECRET}"}],
            },
        },
        spark,
    )
    assert code == ExitCode.SUCCESS, report
    assert report["metrics"]["numDeletedRows"] == 1
    left = sorted(r["value"] for r in spark.read.format("delta").load(table_path).collect())
    assert left == sorted(v for v in HOSTILE if v != "x' OR '1'='1")


@pytest.mark.classic_session  # binding happens in the server's analyzer, the same for a Connect session
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE delta.`{table}` SET value = :value WHERE id = 0",
        "DELETE FROM delta.`{table}` AS t WHERE t.id = :id",
        "MERGE INTO delta.`{table}` AS t USING (SELECT 0 AS id) AS s ON t.id = s.id AND t.id = :id "
        "WHEN MATCHED THEN DELETE",
    ],
    ids=["update", "delete", "merge"],
)
def test_deltas_dml_binds_no_parameter_markers_so_values_stay_quoted_literals(
    spark: SparkSession, table_path: str, statement: str
) -> None:
    """Why ``equals``, ``set_values`` and partition pins are quoted literals (``engine/literals.py``) and not
    Spark's parameter markers: Delta's UPDATE, DELETE and MERGE leave them unbound (Delta 4.4 on Spark 4.2).
    When this fails, Delta binds them: pass those values as ``args`` instead."""
    spark.createDataFrame([(0, "a")], "id INT, value STRING").write.format("delta").save(table_path)
    with pytest.raises(Exception, match="UNBOUND_SQL_PARAMETER"):
        spark.sql(statement.format(table=table_path), args={"value": "b", "id": 0})
    assert [tuple(r) for r in spark.read.format("delta").load(table_path).collect()] == [(0, "a")]
