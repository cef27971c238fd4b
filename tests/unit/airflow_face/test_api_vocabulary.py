"""One vocabulary: each operator takes only what it uses, renamed arguments keep working for a release with a
DeprecationWarning naming the new name, and operators and task groups share their defaults."""

from __future__ import annotations

import inspect
import warnings
from datetime import datetime
from typing import Any

import pytest

from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaSqlOperator,
    DeltaVacuumOperator,
)
from airflow_provider_deltacc.sensors.table_version import DeltaTableVersionSensor
from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor
from airflow_provider_deltacc.task_groups import staging_append_then_merge, table_maintenance
from airflow_provider_deltacc.triggers.table_version import DeltaTableTrigger

pytestmark = pytest.mark.unit

WRITER_ONLY = {
    "exactly_once": False,
    "txn_identity": "interval",
    "txn_app_id": "app",
    "txn_version": 3,
    "use_write_lease": False,
    "maintenance_wait_timeout": 5,
    "admission_wait_timeout": 5,
    "unsafe_storage_wait_timeout": 5,
}


@pytest.mark.parametrize("operator", [DeltaOptimizeOperator, DeltaVacuumOperator])
@pytest.mark.parametrize("name", sorted(WRITER_ONLY))
def test_maintenance_refuses_writer_only_arguments(operator: type[Any], name: str) -> None:
    with pytest.raises(TypeError, match=name):
        operator(task_id="m", table="/data/t", **{name: WRITER_ONLY[name]})


def test_writers_take_the_writer_arguments_and_not_the_gates() -> None:
    merge = DeltaMergeOperator(task_id="w", table="/data/t", source="SELECT 1", keys=["id"], **WRITER_ONLY)
    assert {name: getattr(merge, name) for name in WRITER_ONLY} == WRITER_ONLY
    for gate_only in ("gate_wait_timeout", "write_windows", "deferrable", "poll_interval"):
        with pytest.raises(TypeError, match=gate_only):
            DeltaAppendOperator(task_id="w", table="/data/t", source="SELECT 1", **{gate_only: 1})


def _renamed(build: Any, old: str, new: str) -> Any:
    with pytest.warns(DeprecationWarning, match=rf"'{old}' is deprecated .* use {new}=") as caught:
        task = build()
    assert caught[0].filename == __file__  # the warning points at the caller's line, not the provider's
    return task


def test_renamed_arguments_still_work_with_a_warning_naming_the_new_name() -> None:
    merge = _renamed(
        lambda: DeltaMergeOperator(
            task_id="w", table="/data/t", source="SELECT 1", keys=["id"], admission_timeout=7
        ),
        "admission_timeout",
        "admission_wait_timeout",
    )
    assert merge.admission_wait_timeout == 7
    vacuum = _renamed(
        lambda: DeltaVacuumOperator(task_id="v", table="/data/t", max_wait=9), "max_wait", "gate_wait_timeout"
    )
    assert vacuum.gate_wait_timeout == 9
    spec = [{"date": "2026-11-20"}]
    sensor = _renamed(
        lambda: DeltaWriteWindowSensor(task_id="s", table="/data/t", partitions=spec),
        "partitions",
        "partition_values",
    )
    assert sensor.partition_values == spec
    version = _renamed(
        lambda: DeltaTableVersionSensor(task_id="s", table="/data/t", partition={"date": "2026-11-20"}),
        "partition",
        "partition_values",
    )
    assert version.partition_values == {"date": "2026-11-20"}
    sql = _renamed(
        lambda: DeltaSqlOperator(
            task_id="q", table="/data/t", statement="DELETE FROM {table}", statement_class="maintenance"
        ),
        "statement_class",
        "op_class",
    )
    assert sql.op_class == "maintenance" and sql.build_options({})["op_class"] == "maintenance"
    trigger = _renamed(lambda: DeltaTableTrigger(table_uri="/data/t", condition={}), "table_uri", "table")
    assert trigger.table == "/data/t"


@pytest.mark.parametrize("sensor", [DeltaTableVersionSensor, DeltaWriteWindowSensor])
def test_the_sensors_wait_interval_is_airflows_poke_interval(sensor: type[Any]) -> None:
    extra = {"operation": "MERGE"} if sensor is DeltaTableVersionSensor else {}
    assert sensor(task_id="s", table="/data/t", **extra).poke_interval == 30  # the provider's default
    assert sensor(task_id="s", table="/data/t", poke_interval=5, **extra).poke_interval == 5
    old = _renamed(
        lambda: sensor(task_id="s", table="/data/t", poll_interval=7, **extra),
        "poll_interval",
        "poke_interval",
    )
    assert old.poke_interval == 7 and not hasattr(old, "poll_interval")
    with pytest.raises(TypeError, match="'poll_interval' is the old name of 'poke_interval'; give only"):
        sensor(task_id="s", table="/data/t", poll_interval=7, poke_interval=5, **extra)


def test_poll_interval_in_default_args_and_poke_interval_in_default_args() -> None:
    from airflow.sdk import DAG

    start = datetime(2026, 11, 1)
    old_name = r"'poll_interval' \(in default_args\).*poke_interval=12"
    with (
        DAG("old_defaults", default_args={"poll_interval": 12}, schedule=None, start_date=start),
        pytest.warns(DeprecationWarning, match=old_name),
    ):
        sensor = DeltaWriteWindowSensor(task_id="s", table="/data/t")
    assert sensor.poke_interval == 12
    # A DAG's poke_interval (for all its sensors) does not make a sensor's own old name ambiguous.
    with DAG("new_defaults", default_args={"poke_interval": 60}, schedule=None, start_date=start):
        with pytest.warns(DeprecationWarning, match="use poke_interval=5"):
            own = DeltaTableVersionSensor(task_id="own", table="/data/t", operation="MERGE", poll_interval=5)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            shared = DeltaTableVersionSensor(task_id="shared", table="/data/t", operation="MERGE")
    assert (own.poke_interval, shared.poke_interval) == (5, 60)


def test_vacuum_keeps_list_only_because_dry_run_is_a_base_operator_method() -> None:
    vacuum = DeltaVacuumOperator(task_id="v", table="/data/t", list_only=True)
    assert vacuum.build_options({})["dry_run"] is True  # the job spec's (and delta-rs') name
    assert callable(vacuum.dry_run)  # Airflow's BaseOperator.dry_run() is not shadowed
    assert "list_only" in inspect.signature(table_maintenance).parameters
    with pytest.raises(TypeError, match="dry_run"):
        DeltaVacuumOperator(task_id="v2", table="/data/t", dry_run=True)


def test_old_names_in_default_args_are_taken_with_a_warning_and_never_win_over_new_ones() -> None:
    from airflow.sdk import DAG

    old = {"admission_timeout": 7, "max_wait": 11, "partitions": [{"date": "2026-11-20"}]}
    with DAG("renamed_defaults", default_args=old, schedule=None, start_date=datetime(2026, 11, 1)):
        with pytest.warns(DeprecationWarning, match=r"'admission_timeout' \(in default_args\) is deprecated"):
            merge = DeltaMergeOperator(task_id="w", table="/data/t", source="SELECT 1", keys=["id"])
        with pytest.warns(DeprecationWarning, match=r"'max_wait' \(in default_args\).*gate_wait_timeout=11"):
            vacuum = DeltaVacuumOperator(task_id="v", table="/data/t")
        with pytest.warns(DeprecationWarning, match="partition_values="):
            sensor = DeltaWriteWindowSensor(task_id="s", table="/data/t")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            explicit = DeltaMergeOperator(
                task_id="x", table="/data/t", source="SELECT 1", keys=["id"], admission_wait_timeout=3
            )
    assert (merge.admission_wait_timeout, vacuum.gate_wait_timeout) == (7, 11)
    assert sensor.partition_values == old["partitions"] and explicit.admission_wait_timeout == 3
    both = {**old, "admission_wait_timeout": 5}
    with (
        DAG("both_defaults", default_args=both, schedule=None, start_date=datetime(2026, 11, 1)),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error")
        append = DeltaAppendOperator(task_id="a", table="/data/t", source="SELECT 1")
    assert append.admission_wait_timeout == 5


def test_a_trigger_serialized_before_the_rename_resumes_under_the_new_name() -> None:
    old_kwargs = {"table_uri": "/data/t", "condition": {"after_version": 1}, "poll_interval": 5.0}
    with pytest.warns(DeprecationWarning):
        trigger = DeltaTableTrigger(**old_kwargs)  # what the triggerer does with the stored kwargs
    classpath, kwargs = trigger.serialize()
    assert kwargs["table"] == "/data/t" and "table_uri" not in kwargs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DeltaTableTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_mapped_tasks_take_the_old_names_too_and_refuse_what_they_do_not_use() -> None:
    with _dag() as dag:
        merge = _renamed(
            lambda: DeltaMergeOperator.partial(
                task_id="m", keys=["id"], source="SELECT 1", admission_timeout=5
            ).expand(table=["/a", "/b"]),
            "admission_timeout",
            "admission_wait_timeout",
        )
        vacuum = _renamed(
            lambda: DeltaVacuumOperator.partial(task_id="v", max_wait=9).expand(table=["/a"]),
            "max_wait",
            "gate_wait_timeout",
        )
        sensor = _renamed(
            lambda: DeltaWriteWindowSensor.partial(task_id="s", partitions=[{"d": "1"}]).expand(table=["/a"]),
            "partitions",
            "partition_values",
        )
        version = _renamed(
            lambda: DeltaTableVersionSensor.partial(task_id="t", operation="MERGE", poll_interval=4).expand(
                table=["/a"]
            ),
            "poll_interval",
            "poke_interval",
        )
        with pytest.raises(TypeError, match="give only poke_interval="):
            DeltaWriteWindowSensor.partial(task_id="s2", poll_interval=1, poke_interval=2).expand(
                table=["/a"]
            )
        with pytest.raises(TypeError, match="exactly_once"):
            DeltaOptimizeOperator.partial(task_id="o", exactly_once=False).expand(table=["/a"])
        with pytest.raises(TypeError, match="give only gate_wait_timeout="):
            DeltaOptimizeOperator.partial(task_id="o2", max_wait=1, gate_wait_timeout=2).expand(table=["/a"])
    assert merge.partial_kwargs["admission_wait_timeout"] == 5
    assert vacuum.partial_kwargs["gate_wait_timeout"] == 9
    assert sensor.partial_kwargs["partition_values"] == [{"d": "1"}]
    assert version.partial_kwargs["poke_interval"] == 4
    assert {task.task_id for task in dag.tasks} == {"m", "v", "s", "t"}


def test_both_names_at_once_are_refused() -> None:
    with pytest.raises(TypeError, match="'max_wait' is the old name of 'gate_wait_timeout'"):
        DeltaOptimizeOperator(task_id="o", table="/data/t", max_wait=1, gate_wait_timeout=2)
    with pytest.raises(TypeError, match="admission_wait_timeout"):
        DeltaMergeOperator(
            task_id="w",
            table="/data/t",
            source="SELECT 1",
            keys=["id"],
            admission_timeout=1,
            admission_wait_timeout=2,
        )


def _dag() -> Any:
    from airflow.sdk import DAG

    return DAG("vocabulary", schedule=None, start_date=datetime(2026, 1, 1), catchup=False)


def test_the_maintenance_group_takes_the_new_names_and_the_old_one_for_a_release() -> None:
    with _dag() as dag:
        table_maintenance(table="/data/t", gate_wait_timeout=60, partition_values=[{"date": "2026-11-20"}])
    gate, optimize, vacuum = (dag.get_task(f"table_maintenance.{t}") for t in ("gate", "optimize", "vacuum"))
    assert optimize.gate_wait_timeout == vacuum.gate_wait_timeout == 60
    assert gate.partition_values == optimize.partition_values == [{"date": "2026-11-20"}]
    with _dag() as dag, pytest.warns(DeprecationWarning, match="use gate_wait_timeout=30"):
        table_maintenance(table="/data/t", max_wait=30)
    assert dag.get_task("table_maintenance.vacuum").gate_wait_timeout == 30
    with _dag(), pytest.raises(TypeError, match="unexpected keyword arguments \\['max_wiat'\\]"):
        table_maintenance(table="/data/t", max_wiat=30)


STAGING: dict[str, Any] = {
    "sources": ["SELECT 1"],
    "staging_table": "/data/staging",
    "target_table": "/data/target",
    "schema": "id BIGINT, date DATE, region STRING",
    "keys": ["id", "date"],
}


@pytest.mark.parametrize(
    ("old", "new", "columns"),
    [("partition_columns", "partition_by", ["date"]), ("cluster_columns", "cluster_by", ["region"])],
)
def test_the_staging_group_takes_the_operators_layout_names(old: str, new: str, columns: list[str]) -> None:
    with _dag() as dag:
        staging_append_then_merge(**STAGING, **{new: columns})
    assert getattr(dag.get_task("staging_append_then_merge.create_target"), new) == columns
    with (
        _dag() as dag,
        pytest.warns(DeprecationWarning, match=rf"'{old}' is deprecated .* use {new}=") as caught,
    ):
        staging_append_then_merge(**STAGING, **{old: columns})
    assert caught[0].filename == __file__
    assert getattr(dag.get_task("staging_append_then_merge.create_target"), new) == columns
    with _dag(), pytest.raises(TypeError, match=rf"'{old}' is the old name of '{new}'; give only {new}="):
        staging_append_then_merge(**STAGING, **{old: columns, new: columns})
    with _dag(), pytest.raises(TypeError, match="unexpected keyword arguments \\['partition_colums'\\]"):
        staging_append_then_merge(**STAGING, partition_colums=["date"])


def _defaults(operator: type[Any]) -> dict[str, Any]:
    """Every ``__init__`` argument's default along the operator's classes (the most derived one wins)."""
    found: dict[str, Any] = {}
    for cls in reversed(operator.__mro__):
        if "__init__" in vars(cls):
            for name, parameter in inspect.signature(vars(cls)["__init__"]).parameters.items():
                found[name] = parameter.default
    return found


@pytest.mark.parametrize(
    ("group", "operators"),
    [
        (table_maintenance, (DeltaOptimizeOperator, DeltaVacuumOperator, DeltaWriteWindowSensor)),
        (staging_append_then_merge, (DeltaMergeOperator, DeltaAppendOperator)),
    ],
)
def test_operators_and_groups_share_their_defaults(group: Any, operators: tuple[type[Any], ...]) -> None:
    arguments = inspect.signature(group).parameters
    for operator in operators:
        own = _defaults(operator)
        optional = {
            name for name, argument in arguments.items() if argument.default is not inspect.Parameter.empty
        }
        shared = sorted(set(own) & optional)
        assert shared, operator
        for name in shared:
            assert own[name] == arguments[name].default, f"{group.__name__}({name}=) vs {operator.__name__}"
