"""The advisor on a table a task creates ``CLUSTER BY``: pins do not help, the fix says what does."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.advisor.findings import Level
from airflow_provider_deltacc.advisor.fixes import CLUSTERED_FIX
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator, DeltaUpdateOperator
from tests.unit.advisor.helpers import T, dag, pair, rows, run

pytestmark = pytest.mark.unit


def test_dml_on_different_clustering_values_will_conflict_and_the_fix_is_not_a_pin() -> None:
    with dag() as d:
        create = DeltaAppendOperator(
            task_id="create", table=T, source=rows("2026-11-01", 1), cluster_by=["date"]
        )
        merge = DeltaMergeOperator(
            task_id="merge", table=T, source=rows("2026-11-01", 2), keys=["id", "date"]
        )
        update = DeltaUpdateOperator(
            task_id="update", table=T, set_values={"v": "y"}, partition_values=[{"date": "2026-11-02"}]
        )
        create >> [merge, update]
    finding = pair(run(d), "merge", "update")
    assert finding.level is Level.WILL
    assert "ConcurrentAppendException" in finding.exceptions
    assert "liquid-clustered" in finding.reason and "clustering columns" in finding.reason
    assert CLUSTERED_FIX in finding.fixes
    assert not any(fix.startswith("pin ") for fix in finding.fixes), finding.fixes


def test_the_same_dag_on_a_partitioned_table_is_kept_apart_by_its_pins() -> None:
    with dag() as d:
        create = DeltaAppendOperator(
            task_id="create", table=T, source=rows("2026-11-01", 1), partition_by=["date"]
        )
        merge = DeltaMergeOperator(
            task_id="merge", table=T, source=rows("2026-11-01", 2), keys=["id", "date"]
        )
        update = DeltaUpdateOperator(
            task_id="update", table=T, set_values={"v": "y"}, partition_values=[{"date": "2026-11-02"}]
        )
        create >> [merge, update]
    assert pair(run(d), "merge", "update").level is Level.CANNOT
