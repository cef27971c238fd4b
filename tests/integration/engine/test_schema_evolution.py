"""MERGE with a source column the table lacks: refused unless schema evolution is switched on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.engine.operations import build_operation
from airflow_provider_deltacc.engine.run import operation_session
from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import create_table, rows_source, version

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

WIDER = "id INT, date DATE, value STRING, channel STRING"
AUTO_MERGE = {"spark.databricks.delta.schema.autoMerge.enabled": "true"}


def _merge(table: str, spark_conf: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "operation": "merge",
        "table": table,
        "source": rows_source([[1, "2026-11-20", "changed", "web"], [9, "2026-11-20", "new", "shop"]], WIDER),
        "options": {"keys": ["id", "date"]},
        "spark_conf": spark_conf or {},
    }


def test_new_source_column_needs_schema_evolution(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, [(1, "2026-11-20", "old"), (2, "2026-11-20", "kept")])
    before = version(spark, table_path)

    code, report = run_job(_merge(table_path), spark)
    assert code == ExitCode.BAD_INPUT, report
    assert report["error"]["field"] == "options.when_matched[0]"
    assert "channel" in report["error"]["message"] and "autoMerge" in report["error"]["message"]
    assert version(spark, table_path) == before, "nothing is written on bad input"

    code, report = run_job(_merge(table_path, AUTO_MERGE), spark)
    assert code == ExitCode.SUCCESS, report
    rows = {r["id"]: r.asDict() for r in spark.read.format("delta").load(table_path).collect()}
    assert rows[1]["value"] == "changed" and rows[1]["channel"] == "web"
    assert rows[2]["value"] == "kept" and rows[2]["channel"] is None
    assert rows[9]["channel"] == "shop"


@pytest.mark.parametrize(
    ("spark_conf", "expected"),
    [({}, OperationClass.READ_MODIFY_WRITE), (AUTO_MERGE, OperationClass.SCHEMA_CHANGING)],
)
def test_the_merge_operator_states_the_class_the_engine_runs(
    spark: SparkSession,
    table_path: str,
    spark_conf: dict[str, str],
    expected: OperationClass,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # no spark-defaults.conf on this worker
    create_table(spark, table_path, [(1, "2026-11-20", "old")])
    spec = parse_spec({**_merge(table_path, spark_conf), "source": rows_source([[1, "2026-11-20", "new"]])})
    with operation_session(spark, spec.spark_conf) as session:
        prepared = build_operation(session, spec)
    operator = DeltaMergeOperator(
        task_id="merge", table=table_path, source="SELECT 1", keys=["id", "date"], spark_conf=spark_conf
    )
    assert prepared.op_class is expected
    assert operator.operation_class is prepared.op_class
