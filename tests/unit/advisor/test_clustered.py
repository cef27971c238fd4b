"""The advisor on a table a task creates ``CLUSTER BY``: pins do not help, the fix says what does."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.advisor.findings import Finding, Level
from airflow_provider_deltacc.advisor.fixes import CLUSTERED_FIX
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator, DeltaUpdateOperator
from tests.unit.advisor.helpers import T, dag, pair, rows, run

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
    assert finding.level is Level.WILL
    assert "ConcurrentAppendException" in finding.exceptions
    assert "liquid-clustered" in finding.reason and "clustering columns" in finding.reason
    assert CLUSTERED_FIX in finding.fixes
    assert not any(fix.startswith("pin ") for fix in finding.fixes), finding.fixes


def test_the_same_dag_on_a_partitioned_table_is_kept_apart_by_its_pins() -> None:
    assert _merge_and_update_on_different_values(partition_by=["date"]).level is Level.CANNOT
