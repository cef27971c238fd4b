"""The VACUUM guard on a real Delta table: an unsafe retention is refused before anything runs, with a
message naming retention_hours and the table's retention; ``force=True`` is the only way past it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.leases import store_from_url
from airflow_provider_deltacc.operators import DeltaVacuumOperator
from tests.unit.maintenance.helpers import context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def _table_with_removed_files(spark: SparkSession, path: str) -> None:
    spark.range(0, 20).coalesce(4).write.format("delta").save(path)
    spark.range(0, 20).coalesce(1).write.format("delta").mode("overwrite").save(path)


def _vacuum(path: str, store_url: str, **kwargs: object) -> DeltaVacuumOperator:
    return DeltaVacuumOperator(
        task_id="vacuum", table=path, execution_mode="in_process", lease_store_url=store_url, **kwargs
    )


def test_unsafe_retention_is_refused_and_force_is_explicit(spark: SparkSession, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    path = str(tmp_path / "events")
    store_url = f"sqlite:///{tmp_path / 'leases.db'}"
    _table_with_removed_files(spark, path)
    version = DeltaTable(path).version()

    with pytest.raises(DeltaCCInputError) as refused:
        _vacuum(path, store_url, retention_hours=0).execute(context(dag_id="maint", task_id="vacuum"))
    message = str(refused.value)
    assert refused.value.field == "retention_hours"
    assert "VACUUM retention 0 h is shorter than the table's retention of 168 h" in message
    assert "(delta.deletedFileRetentionDuration)" in message
    assert "Use retention_hours >= 168" in message and "pass force=True" in message
    assert DeltaTable(path).version() == version, "nothing may run when the guard refuses"
    with store_from_url(store_url) as store:
        assert store.history(path) == []

    report = _vacuum(path, store_url, retention_hours=0, force=True).execute(
        context(dag_id="maint", task_id="vacuum")
    )
    assert report["status"] == "committed"
    assert report["metrics"]["effective_retention_hours"] == 0
    assert DeltaTable(path).to_pyarrow_table().num_rows == 20
    with store_from_url(store_url) as store:
        [lease] = store.history(path)
    assert lease.op_kind.name == "VACUUM" and lease.released_at is not None
