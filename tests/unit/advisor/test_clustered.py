"""The advisor on a table a task creates ``CLUSTER BY``: pins do not help, the fix says what does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_deltacc.advisor.findings import Finding, FindingLevel
from airflow_provider_deltacc.advisor.fixes import CLUSTERED_FIX
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator, DeltaUpdateOperator
from tests.unit.advisor.helpers import REFERENCE, T, dag, pair, rows, run

pytestmark = pytest.mark.unit


def _merge_and_update_on_different_values(**layout: list[str]) -> Finding:
    """A MERGE of date 2026-11-01 and an UPDATE of 2026-11-02 after the task that creates the table."""
    with dag() as d:
        create = DeltaAppendOperator(task_id="create", table=T, source=rows("2026-11-01", 1), **layout)
        merge = DeltaMergeOperator(
            task_id="merge", table=T, source=rows("2026-11-01", 2), keys=["id", "date"]
        )
        update = DeltaUpdateOperator(
            task_id="update", table=T, set_values={"v": "y"}, partition_values=[{"date": "2026-11-02"}]
        )
        create >> [merge, update]
    return pair(run(d), "merge", "update")


def test_dml_on_different_clustering_values_will_conflict_and_the_fix_is_not_a_pin() -> None:
    finding = _merge_and_update_on_different_values(cluster_by=["date"])
    assert finding.level is FindingLevel.WILL
    assert "ConcurrentAppendException" in finding.exceptions
    assert "liquid-clustered" in finding.reason and "clustering columns" in finding.reason
    assert CLUSTERED_FIX in finding.fixes
    assert not any(fix.startswith("pin ") for fix in finding.fixes), finding.fixes


def test_the_same_dag_on_a_partitioned_table_is_kept_apart_by_its_pins() -> None:
    assert _merge_and_update_on_different_values(partition_by=["date"]).level is FindingLevel.CANNOT


def _clustered_log(path: Path) -> str:
    """A one-commit Delta log of an empty table CLUSTER BY (date), as delta-spark 4.4 writes it."""
    schema = {
        "type": "struct",
        "fields": [
            {"name": name, "type": kind, "nullable": True, "metadata": {}}
            for name, kind in (("id", "integer"), ("date", "string"), ("v", "string"))
        ],
    }
    actions = [
        {"commitInfo": {"operation": "CREATE TABLE", "operationParameters": {"clusterBy": '["date"]'}}},
        {
            "metaData": {
                "id": "6095f8cf-6375-432f-aaf5-f87bbd17ff77",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": [],
                "configuration": {},
                "createdTime": 1795514720455,
            }
        },
        {
            "protocol": {
                "minReaderVersion": 1,
                "minWriterVersion": 7,
                "writerFeatures": ["domainMetadata", "clustering", "invariants", "appendOnly"],
            }
        },
        {
            "domainMetadata": {
                "domain": "delta.clustering",
                "configuration": '{"clusteringColumns":[["date"]],"domainName":"delta.clustering"}',
                "removed": False,
            }
        },
    ]
    log = path / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(path)


def test_the_delta_log_tells_the_advisor_a_table_is_clustered(tmp_path: Path) -> None:
    from airflow_provider_deltacc.advisor.analysis import analyse, delta_log_columns

    table = _clustered_log(tmp_path / "events")
    with dag() as d:
        DeltaMergeOperator(task_id="merge", table=table, source=rows("2026-11-01", 2), keys=["id", "date"])
        DeltaUpdateOperator(task_id="update", table=table, set_values={"v": "y"}, condition="id = 3")
    finding = pair(analyse([d], reference=REFERENCE, read_columns=delta_log_columns()), "merge", "update")
    assert finding.level is FindingLevel.WILL and "liquid-clustered" in finding.reason
    assert "clustered_dml_always_conflicts" in finding.verdict.rules
    assert CLUSTERED_FIX in finding.fixes
