"""Liquid-clustered tables through ``run_job``: created by an append, optimized (incremental and FULL), and
read back by the gate's table facts (delta-rs), plus the input errors only a real table can show."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.table_facts import read_table_facts
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import contents, history, rows_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, region STRING, value STRING"


def _append(table: str, rows: list[list[Any]], **options: Any) -> dict[str, Any]:
    return {"operation": "append", "table": table, "source": rows_source(rows, SCHEMA), "options": options}


def _ok(spark: SparkSession, spec: dict[str, Any]) -> dict[str, Any]:
    code, report = run_job(spec, spark)
    assert code == ExitCode.SUCCESS, report
    assert report["status"] == "committed", report
    return report


def _bad(spark: SparkSession, spec: dict[str, Any], field: str) -> str:
    code, report = run_job(spec, spark)
    assert code == ExitCode.BAD_INPUT, report
    assert report["error"]["field"] == field, report["error"]
    return str(report["error"]["message"])


def test_append_creates_a_clustered_table_and_optimize_clusters_it(
    spark: SparkSession, table_path: str
) -> None:
    first = _ok(spark, _append(table_path, [[1, "eu", "a"]], cluster_by=["region"]))
    assert first["metrics"]["created_table"] is True
    for row in ([2, "us", "b"], [3, "eu", "c"]):
        _ok(spark, _append(table_path, [row], cluster_by=["region"]))
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{table_path}`").collect()[0]
    assert detail["clusteringColumns"] == ["region"] and detail["partitionColumns"] == []

    incremental = _ok(spark, {"operation": "optimize", "table": table_path})
    assert incremental["metrics"]["num_files_removed"] == 3 and incremental["metrics"]["num_files_added"] == 1
    full = _ok(spark, {"operation": "optimize", "table": table_path, "options": {"full": True}})
    assert full["table_version"] >= incremental["table_version"]
    operations = [operation for _, operation in history(spark, table_path)]
    assert operations.count("OPTIMIZE") >= 1 and operations[-1] == "CREATE TABLE"
    assert contents(spark, table_path) == [("1", "eu", "a"), ("2", "us", "b"), ("3", "eu", "c")]

    facts = read_table_facts(Table(table_path))
    assert facts is not None and facts.clustered and facts.clustering_columns == ("region",)
    assert facts.traits().clustered and not facts.traits().partitioned


@pytest.mark.classic_session
def test_changed_clustering_columns_are_read_from_the_log(spark: SparkSession, table_path: str) -> None:
    _ok(spark, _append(table_path, [[1, "eu", "a"]], cluster_by=["region"]))
    spark.sql(f"ALTER TABLE delta.`{table_path}` CLUSTER BY (region, id)")
    facts = read_table_facts(Table(table_path))
    assert facts is not None and facts.clustering_columns == ("region", "id")


@pytest.mark.classic_session
def test_clustering_input_errors_name_the_field(spark: SparkSession, table_path: str, tmp_path: Any) -> None:
    assert "not a source column" in _bad(
        spark, _append(table_path, [[1, "eu", "a"]], cluster_by=["country"]), "options.cluster_by[0]"
    )
    message = _bad(
        spark,
        _append(table_path, [[1, "eu", "a"]], cluster_by=["region"], partition_by=["region"]),
        "options.cluster_by",
    )
    assert "partition_by" in message and "cluster_by" in message

    _ok(spark, _append(table_path, [[1, "eu", "a"]], cluster_by=["region"]))
    assert "clustered by ['region']" in _bad(
        spark, _append(table_path, [[2, "eu", "b"]], cluster_by=["id"]), "options.cluster_by"
    )
    zorder = {"operation": "optimize", "table": table_path, "options": {"zorder_by": ["id"]}}
    assert "liquid-clustered" in _bad(spark, zorder, "options.zorder_by")

    plain = str(tmp_path / "plain")
    _ok(spark, _append(plain, [[1, "eu", "a"]]))
    full = {"operation": "optimize", "table": plain, "options": {"full": True}}
    assert "not clustered" in _bad(spark, full, "options.full")
    facts = read_table_facts(Table(plain))
    assert facts is not None and not facts.clustered and facts.clustering_columns == ()
