"""OpenLineage: the operators report the source they read and the table version they committed (with the
OpenLineage provider installed), and parsing a DAG imports no OpenLineage."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from airflow_provider_deltacc.lineage.openlineage import dataset_name
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("/data/orders", ("file", "/data/orders")),
        ("s3a://bucket/wh/orders/", ("s3://bucket", "wh/orders")),
        ("sales.orders", ("spark_catalog", "sales.orders")),
        ("unity.sales.orders", ("unity", "sales.orders")),
    ],
)
def test_dataset_names_follow_openlineage_naming(table: str, expected: tuple[str, str]) -> None:
    assert dataset_name(table) == expected


def _spec(source: dict[str, Any]) -> Any:
    """The typed spec an operator's run committed, with ``source``."""
    from airflow_provider_deltacc.contract.spec_parse import parse_spec

    return parse_spec({"operation": "append", "table": "/data/orders", "source": source, "options": {}})


def test_the_facets_name_the_source_and_the_committed_version() -> None:
    op = DeltaMergeOperator(task_id="m", table="s3a://bucket/orders", source="sales.raw_orders", keys=["id"])
    op.committed_run = (_spec({"kind": "table", "name": "sales.raw_orders"}), {"table_version": 12})
    lineage = op.get_openlineage_facets_on_complete(task_instance=None)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("spark_catalog", "sales.raw_orders")]
    (output,) = lineage.outputs
    assert (output.namespace, output.name) == ("s3://bucket", "orders")
    assert output.facets["version"].datasetVersion == "12"


def test_a_query_source_is_the_jobs_sql() -> None:
    op = DeltaAppendOperator(task_id="a", table="/data/orders", source="SELECT 1 AS id")
    op.committed_run = (_spec({"kind": "sql", "query": "SELECT 1 AS id"}), {"table_version": 0})
    lineage = op.get_openlineage_facets_on_complete(task_instance=None)
    assert lineage.inputs == [] and lineage.job_facets["sql"].query == "SELECT 1 AS id"
    assert lineage.outputs[0].facets["version"].datasetVersion == "0"


def test_a_source_function_reports_the_table_it_wrote_and_no_made_up_input() -> None:
    from airflow_provider_deltacc.contract.source_function import SourceFunction
    from airflow_provider_deltacc.spark_job.source_travel import travel_form

    def build(spark: object) -> object:
        return spark

    op = DeltaMergeOperator(task_id="m", table="/data/orders", source=build, keys=["id"])
    function = SourceFunction(build)
    for source in ({"kind": "callable", "function": function}, travel_form(function)):
        op.committed_run = (_spec(source), {"table_version": 3})
        lineage = op.get_openlineage_facets_on_complete(task_instance=None)
        assert lineage.inputs == [] and [d.name for d in lineage.outputs] == ["/data/orders"]


def test_a_path_source_is_an_input_and_a_relative_path_is_none() -> None:
    from airflow_provider_deltacc.contract.spec import SourceSpec
    from airflow_provider_deltacc.lineage.openlineage import operator_lineage

    lake = operator_lineage("/data/orders", SourceSpec("delta", path="s3a://lake/raw/orders"), None)
    assert [(d.namespace, d.name) for d in lake.inputs] == [("s3://lake", "raw/orders")]
    assert operator_lineage("/data/orders", SourceSpec("parquet", path="raw/orders"), None).inputs == []


def test_a_task_that_did_not_commit_reports_the_target_without_a_version() -> None:
    op = DeltaAppendOperator(task_id="a", table="/data/orders", source="SELECT 1 AS id")
    lineage = op.get_openlineage_facets_on_complete(task_instance=None)
    assert [(d.name, d.facets) for d in lineage.outputs] == [("/data/orders", {})]


def test_building_operators_imports_no_openlineage() -> None:
    code = (
        "import sys\n"
        "from airflow_provider_deltacc.operators import DeltaAppendOperator\n"
        "DeltaAppendOperator(task_id='a', table='/data/orders', source='SELECT 1')\n"
        # Airflow's providers manager reads every provider's get_provider_info; nothing else may load.
        "heavy = ('openlineage', 'airflow.providers.openlineage.',"
        " 'airflow_provider_deltacc.lineage.openlineage')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy) and 'provider_info' not in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
