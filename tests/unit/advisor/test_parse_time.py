"""Parse-time warnings: what one operator (or the task groups building it) shows on its own."""

from __future__ import annotations

import warnings

import pytest

from airflow_provider_deltacc.exceptions import DeltaConflictWarning
from airflow_provider_deltacc.operators import (
    DeltaMergeOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from tests.unit.advisor.helpers import T, dag, rows

pytestmark = pytest.mark.unit


def _caught() -> warnings.catch_warnings[list[warnings.WarningMessage]]:
    return warnings.catch_warnings(record=True)


def _conflict_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, DeltaConflictWarning)]


def test_an_unpinned_merge_warns_at_the_dag_files_line() -> None:
    with _caught() as caught, dag():
        warnings.simplefilter("always")
        DeltaMergeOperator(
            task_id="m", table=T, source=rows("2026-11-01", 1), keys=["id"], partition_pin=None
        )
    [message] = _conflict_warnings(caught)
    assert message.startswith(f"m: MERGE into {T} with partition_pin=None reads the whole table")
    [record] = [w for w in caught if issubclass(w.category, DeltaConflictWarning)]
    assert record.filename == __file__


def test_safe_operators_do_not_warn() -> None:
    with _caught() as caught, dag():
        warnings.simplefilter("always")
        DeltaMergeOperator(task_id="m", table=T, source=rows("2026-11-01", 1), keys=["id", "date"])
        DeltaVacuumOperator(task_id="v", table=T, retention_hours=200)
        DeltaVacuumOperator(task_id="v2", table=T, retention_hours="{{ params.hours }}", force=True)
        DeltaUpdateOperator(task_id="u", table=T, set_values={"v": "1"})
        DeltaSqlOperator(task_id="s", table=T, statement="UPDATE {table} SET v = 1")
    assert _conflict_warnings(caught) == []


def test_forced_short_vacuum_and_sql_maintenance_warn() -> None:
    with _caught() as caught, dag():
        warnings.simplefilter("always")
        DeltaVacuumOperator(task_id="v", table=T, retention_hours=1, force=True)
        DeltaSqlOperator(task_id="s", table=T, statement="  optimize {table} ZORDER BY (id)")
    messages = _conflict_warnings(caught)
    assert len(messages) == 2
    assert "force=True and retention_hours=1" in messages[0]
    assert "use DeltaOptimizeOperator" in messages[1]


def test_the_task_groups_warn_through_their_operators() -> None:
    from airflow_provider_deltacc.task_groups import staging_append_then_merge, table_maintenance

    with _caught() as caught, dag():
        warnings.simplefilter("always")
        staging_append_then_merge(
            sources=[rows("2026-11-01", 1)],
            staging_table="/data/staging",
            target_table=T,
            schema="id INT, date STRING, v STRING",
            keys=["id"],
            partition_pin=None,
        )
        table_maintenance(table="/data/m", retention_hours=2, force=True)
    messages = _conflict_warnings(caught)
    assert any("merge_batches: MERGE into" in m for m in messages)
    assert any("vacuum: VACUUM of /data/m with force=True" in m for m in messages)
