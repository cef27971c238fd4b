"""One vocabulary: each operator takes only what it uses, an argument's name from before its rename is refused
with the name it has now (nothing was released under the old one), and operators and task groups share their
defaults."""

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
    "turn_wait_timeout": 5,
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


def _dag() -> Any:
    from airflow.sdk import DAG

    return DAG("vocabulary", schedule=None, start_date=datetime(2026, 1, 1), catchup=False)


STAGING: dict[str, Any] = {
    "sources": ["SELECT 1"],
    "staging_table": "/data/staging",
    "target_table": "/data/target",
    "schema": "id BIGINT, date DATE, region STRING",
    "keys": ["id", "date"],
}
MERGE: dict[str, Any] = {"task_id": "w", "table": "/data/t", "source": "SELECT 1", "keys": ["id"]}
SQL: dict[str, Any] = {"task_id": "q", "table": "/data/t", "statement": "DELETE FROM {table}"}
#: Who takes the arguments -> a call of it with some more keyword arguments.
BUILD: dict[str, Any] = {
    "DeltaMergeOperator": lambda kw: DeltaMergeOperator(**MERGE, **kw),
    "DeltaAppendOperator": lambda kw: DeltaAppendOperator(task_id="a", table="/t", source="SELECT 1", **kw),
    "DeltaSqlOperator": lambda kw: DeltaSqlOperator(**SQL, **kw),
    "DeltaOptimizeOperator": lambda kw: DeltaOptimizeOperator(task_id="o", table="/data/t", **kw),
    "DeltaVacuumOperator": lambda kw: DeltaVacuumOperator(task_id="v", table="/data/t", **kw),
    "DeltaWriteWindowSensor": lambda kw: DeltaWriteWindowSensor(task_id="s", table="/data/t", **kw),
    "DeltaTableVersionSensor": lambda kw: DeltaTableVersionSensor(
        task_id="s", table="/t", operation="MERGE", **kw
    ),
    "DeltaTableTrigger": lambda kw: DeltaTableTrigger(condition={}, **kw),
    "table_maintenance": lambda kw: table_maintenance(table="/data/t", **kw),
    "staging_append_then_merge": lambda kw: staging_append_then_merge(**STAGING, **kw),
    "DeltaMergeOperator.partial": lambda kw: DeltaMergeOperator.partial(
        task_id="m", keys=["id"], source="SELECT 1", **kw
    ).expand(table=["/a"]),
    "DeltaSqlOperator.partial": lambda kw: DeltaSqlOperator.partial(
        task_id="q", statement="SELECT 1", **kw
    ).expand(table=["/a"]),
    "DeltaVacuumOperator.partial": lambda kw: DeltaVacuumOperator.partial(task_id="v", **kw).expand(
        table=["/a"]
    ),
    "DeltaWriteWindowSensor.partial": lambda kw: DeltaWriteWindowSensor.partial(task_id="s", **kw).expand(
        table=["/a"]
    ),
    "DeltaTableVersionSensor.partial": lambda kw: DeltaTableVersionSensor.partial(
        task_id="t", operation="MERGE", **kw
    ).expand(table=["/a"]),
}
#: (who, the old name, a value, the name now)
OLD_NAMES = [
    ("DeltaMergeOperator", "admission_timeout", 7, "turn_wait_timeout"),
    ("DeltaAppendOperator", "admission_timeout", 7, "turn_wait_timeout"),
    ("DeltaMergeOperator", "admission_wait_timeout", 7, "turn_wait_timeout"),
    ("DeltaAppendOperator", "admission_wait_timeout", 7, "turn_wait_timeout"),
    ("DeltaSqlOperator", "statement_class", "maintenance", "op_class"),
    ("DeltaOptimizeOperator", "max_wait", 9, "gate_wait_timeout"),
    ("DeltaVacuumOperator", "max_wait", 9, "gate_wait_timeout"),
    ("DeltaWriteWindowSensor", "partitions", [{"date": "2026-11-20"}], "partition_values"),
    ("DeltaWriteWindowSensor", "poll_interval", 7, "poke_interval"),
    ("DeltaTableVersionSensor", "partition", {"date": "2026-11-20"}, "partition_values"),
    ("DeltaTableVersionSensor", "poll_interval", 7, "poke_interval"),
    ("DeltaTableTrigger", "table_uri", "/data/t", "table"),
    ("table_maintenance", "max_wait", 30, "gate_wait_timeout"),
    ("staging_append_then_merge", "partition_columns", ["date"], "partition_by"),
    ("staging_append_then_merge", "cluster_columns", ["region"], "cluster_by"),
    ("DeltaMergeOperator.partial", "admission_timeout", 5, "turn_wait_timeout"),
    ("DeltaMergeOperator.partial", "admission_wait_timeout", 5, "turn_wait_timeout"),
    ("DeltaSqlOperator.partial", "statement_class", "maintenance", "op_class"),
    ("DeltaVacuumOperator.partial", "max_wait", 9, "gate_wait_timeout"),
    ("DeltaWriteWindowSensor.partial", "partitions", [{"d": "1"}], "partition_values"),
    ("DeltaTableVersionSensor.partial", "poll_interval", 4, "poke_interval"),
]


@pytest.mark.parametrize(
    ("owner", "old", "value", "new"), OLD_NAMES, ids=[f"{o}-{old}" for o, old, *_ in OLD_NAMES]
)
def test_an_old_name_is_refused_naming_the_value_and_the_name_now(
    owner: str, old: str, value: Any, new: str
) -> None:
    expected = f"{owner.split('.')[0]} got {old}={value!r}; it is called {new}: pass {new}={value!r}"
    with _dag() as dag, pytest.raises(TypeError) as info:
        BUILD[owner]({old: value})
    assert str(info.value) == expected
    assert not dag.tasks  # nothing was added under either name
    with _dag():
        BUILD[owner]({new: value})  # the name now takes the same value


def test_an_old_name_in_default_args_is_a_key_the_operator_does_not_take() -> None:
    """Airflow gives an operator only the ``default_args`` it takes: a DAG's may hold another operator's
    argument of that name (``poll_interval`` is the maintenance operators' own), so no error and no effect."""
    from airflow.sdk import DAG

    old = {
        "poll_interval": 12,
        "admission_timeout": 7,
        "max_wait": 11,
        "partitions": [{"date": "2026-11-20"}],
    }
    with (
        DAG("old_defaults", default_args=old, schedule=None, start_date=datetime(2026, 11, 1)),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error")
        sensor = DeltaWriteWindowSensor(task_id="s", table="/data/t")
        merge = DeltaMergeOperator(**MERGE)
        vacuum = DeltaVacuumOperator(task_id="v", table="/data/t")
    assert (sensor.poke_interval, sensor.partition_values) == (30, None)
    assert (merge.turn_wait_timeout, vacuum.gate_wait_timeout, vacuum.poll_interval) == (
        1800.0,
        None,
        12,
    )


@pytest.mark.parametrize("sensor", [DeltaTableVersionSensor, DeltaWriteWindowSensor])
def test_the_sensors_wait_interval_is_airflows_poke_interval(sensor: type[Any]) -> None:
    extra = {"operation": "MERGE"} if sensor is DeltaTableVersionSensor else {}
    assert sensor(task_id="s", table="/data/t", **extra).poke_interval == 30  # the provider's default
    assert sensor(task_id="s", table="/data/t", poke_interval=5, **extra).poke_interval == 5


def test_vacuum_keeps_list_only_because_dry_run_is_a_base_operator_method() -> None:
    vacuum = DeltaVacuumOperator(task_id="v", table="/data/t", list_only=True)
    assert vacuum.build_options({}).dry_run is True  # the job spec's (and delta-rs') name
    assert callable(vacuum.dry_run)  # Airflow's BaseOperator.dry_run() is not shadowed
    assert "list_only" in inspect.signature(table_maintenance).parameters
    with pytest.raises(TypeError, match="dry_run"):
        DeltaVacuumOperator(task_id="v2", table="/data/t", dry_run=True)


def test_the_maintenance_group_takes_the_new_names() -> None:
    with _dag() as dag:
        table_maintenance(table="/data/t", gate_wait_timeout=60, partition_values=[{"date": "2026-11-20"}])
    gate, optimize, vacuum = (dag.get_task(f"table_maintenance.{t}") for t in ("gate", "optimize", "vacuum"))
    assert optimize.gate_wait_timeout == vacuum.gate_wait_timeout == 60
    assert gate.partition_values == optimize.partition_values == [{"date": "2026-11-20"}]
    with _dag(), pytest.raises(TypeError, match="unexpected keyword arguments \\['max_wiat'\\]"):
        table_maintenance(table="/data/t", max_wiat=30)


@pytest.mark.parametrize(("new", "columns"), [("partition_by", ["date"]), ("cluster_by", ["region"])])
def test_the_staging_group_takes_the_operators_layout_names(new: str, columns: list[str]) -> None:
    with _dag() as dag:
        staging_append_then_merge(**STAGING, **{new: columns})
    assert getattr(dag.get_task("staging_append_then_merge.create_target"), new) == columns
    with _dag(), pytest.raises(TypeError, match="unexpected keyword arguments \\['partition_colums'\\]"):
        staging_append_then_merge(**STAGING, partition_colums=["date"])


def test_mapped_tasks_refuse_what_they_do_not_use() -> None:
    with _dag(), pytest.raises(TypeError, match="exactly_once"):
        DeltaOptimizeOperator.partial(task_id="o", exactly_once=False).expand(table=["/a"])


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
