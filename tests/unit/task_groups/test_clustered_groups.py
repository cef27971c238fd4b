"""Both task groups on a liquid-clustered target: what they create and run, and the parse-time checks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError, DeltaConflictWarning
from airflow_provider_deltacc.task_groups import staging_append_then_merge, table_maintenance

pytestmark = pytest.mark.unit

CLUSTERED: dict[str, Any] = {
    "sources": ["SELECT 1"],
    "staging_table": "/data/staging",
    "target_table": "/data/target",
    "schema": "id BIGINT, region STRING, ts BIGINT",
    "keys": ["id"],
    "cluster_by": ["region"],
    "dedup_order_by": "ts",
}


def _dag() -> Any:
    from airflow.sdk import DAG

    return DAG("clustered_unit", schedule=None, start_date=datetime(2026, 1, 1), catchup=False)


def test_the_staging_group_creates_a_clustered_target() -> None:
    with _dag() as dag:
        staging_append_then_merge(group_id="ingest", **CLUSTERED)
    target = dag.get_task("ingest.create_target")
    assert target.cluster_by == ["region"] and target.partition_by is None
    assert dag.get_task("ingest.create_staging").cluster_by is None  # staging stays partitioned by batch


@pytest.mark.parametrize(
    ("change", "argument", "message"),
    [
        ({"partition_by": ["region"]}, "cluster_by", "partition_by and cluster_by cannot both"),
        ({"cluster_by": ["country"]}, "cluster_by", "country"),
        ({"partition_pin": ["region"]}, "partition_pin", "no partitions to pin"),
    ],
)
def test_clustered_staging_validation_names_the_argument(
    change: dict[str, Any], argument: str, message: str
) -> None:
    with _dag(), pytest.raises(DeltaCCInputError, match=message) as raised:
        staging_append_then_merge(**{**CLUSTERED, **change})
    assert raised.value.field == argument


def test_an_auto_pin_on_a_clustered_target_warns_once_and_names_what_works() -> None:
    with _dag(), pytest.warns(DeltaConflictWarning) as caught:
        staging_append_then_merge(**{**CLUSTERED, "partition_pin": "auto"})
    [warning] = [w for w in caught if issubclass(w.category, DeltaConflictWarning)]
    text = str(warning.message)
    assert "liquid-clustered by ['region']" in text and "ConcurrentAppendException" in text
    assert "staging_append_then_merge" in text and "write windows" in text and "take turns" in text


def test_the_default_keyed_pin_on_a_clustered_target_says_nothing(recwarn: pytest.WarningsRecorder) -> None:
    with _dag():
        staging_append_then_merge(**CLUSTERED)
    assert not [w for w in recwarn if issubclass(w.category, DeltaConflictWarning)]


def test_the_maintenance_group_passes_full_to_optimize() -> None:
    with _dag() as dag:
        table_maintenance(table="/data/target", full=True, vacuum=False)
    assert dag.get_task("table_maintenance.optimize").full is True
    with _dag(), pytest.raises(DeltaCCInputError, match="full"):
        table_maintenance(table="/data/target", full=True, zorder_by=["id"])
