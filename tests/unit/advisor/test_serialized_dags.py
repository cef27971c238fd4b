"""The advisor reads DAGs serialized into the metadata DB (what the api-server has: it imports no DAG file) as
it reads the DAG objects: the same task facts and findings for the provider's operators. What Airflow's
serialization loses (an explicit None in ``partial()``, the arguments that are not template fields, a
template field it truncates or keeps only as text) is either stored by the operators or read cautiously."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.advisor import tasks as advisor_tasks
from airflow_provider_deltacc.advisor.analysis import analyse
from airflow_provider_deltacc.advisor.arguments import TRUNCATED, is_serialized
from airflow_provider_deltacc.advisor.tasks import MERGE_AUTO, TaskFacts, is_provider_task, task_facts
from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaOverwritePartitionsOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from tests.support.serialized_dags import read_serialized_dags, remove_serialized_dags, write_serialized_dags
from tests.unit.advisor.helpers import REFERENCE, SCHEMA, rows

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::UserWarning")]

T = "/lake/serialized_orders"
WRITES, NIGHTLY = "ser_advisor_writes", "ser_advisor_nightly"
DAGS_FOLDER = Path(__file__).resolve().parents[3] / "dags"


def _orders_of(spark: Any) -> Any:
    """A source function (never called: nothing runs)."""
    return spark.table("staged_orders")


def _representative() -> list[Any]:
    """Two DAGs on one table: a mapped MERGE without pin, a pinned MERGE, a mapped MERGE pinned by the DAG's
    ``default_args``, OPTIMIZE and VACUUM in a task group, SQL statements, an XCom source, a source function,
    a templated overwrite, UPDATE and DELETE; the other DAG runs every 6 hours with a mapped OPTIMIZE and a
    MERGE."""
    from airflow.sdk import DAG, TaskGroup

    start = datetime(2026, 1, 1)
    with DAG(
        WRITES, schedule="0 2 * * *", start_date=start, default_args={"partition_pin": "auto"}
    ) as writes:
        append = DeltaAppendOperator(
            task_id="append", table=T, source=rows("2026-11-01", 1), partition_by=["date"], merge_schema=True
        )
        DeltaMergeOperator.partial(
            task_id="merge_unpinned", table=T, keys=["id"], partition_pin=None, max_active_tis_per_dag=2
        ).expand(source=[rows("2026-11-01", 1), rows("2026-11-02", 2)])
        DeltaMergeOperator.partial(task_id="merge_defaulted", table=T, keys=["id", "date"]).expand(
            source=[rows("2026-11-03", 3)]
        )
        pinned = DeltaMergeOperator(
            task_id="merge_pinned", table=T, source=rows("2026-11-04", 4), keys=["id"], partition_pin=["date"]
        )
        with TaskGroup("maintenance"):
            DeltaOptimizeOperator(
                task_id="optimize",
                table=T,
                partition_values=[{"date": "2026-11-01"}],
                zorder_by=["id"],
                profile="databricks_write_serializable",
                table_traits={"deletion_vectors": True},
            )
            DeltaVacuumOperator(task_id="vacuum", table=T, retention_hours=200, force=True)
        DeltaSqlOperator(
            task_id="sql_insert",
            table=T,
            statement="INSERT INTO {table} SELECT * FROM source",
            source=rows("2026-11-05", 5),
            op_class="blind_append",
        )
        DeltaSqlOperator(
            task_id="sql_alter",
            table=T,
            statement="ALTER TABLE {table} ADD COLUMNS (c INT)",
            op_class="schema_changing",
        )
        upstream: Any = append.output
        DeltaAppendOperator(task_id="append_xcom", table=T, source=upstream, use_write_lease=False)
        DeltaAppendOperator(task_id="append_function", table=T, source=_orders_of)
        DeltaOverwritePartitionsOperator(
            task_id="overwrite", table=T, source="SELECT 1", partition_values=[{"date": "{{ ds }}"}]
        )
        DeltaUpdateOperator(task_id="update", table=T, set_values={"v": "y"}, equals={"id": 1})
        DeltaDeleteOperator(task_id="delete", table=T, partition_values=[{"date": "2026-10-01"}])
        append >> pinned
    with DAG(NIGHTLY, schedule=timedelta(hours=6), start_date=start, max_active_runs=2) as nightly:
        DeltaOptimizeOperator.partial(
            task_id="optimize_each",
            table=T,
            profile=EngineProfile.DATABRICKS_WRITE_SERIALIZABLE,
            table_traits=TableTraits(deletion_vectors=True),
        ).expand(partition_values=[[{"date": "2026-11-01"}], [{"date": "2026-11-02"}]])
        DeltaMergeOperator(task_id="merge_keyed", table=T, source=rows("2026-11-01", 1), keys=["id", "date"])
    return [writes, nightly]


def _facts(dag: Any) -> dict[str, TaskFacts]:
    return {t.task_id: task_facts(t) for t in dag.task_dict.values() if is_provider_task(t)}


@pytest.fixture
def serialized(airflow_db: Path) -> Iterator[list[str]]:
    """The DAG ids the test wrote to the metadata DB; removed after."""
    written: list[str] = []
    yield written
    remove_serialized_dags(written)


def _store(written: list[str], dags: list[Any]) -> dict[str, Any]:
    written.extend(d.dag_id for d in dags)
    write_serialized_dags(dags)
    stored = read_serialized_dags([d.dag_id for d in dags])
    assert sorted(stored) == sorted(d.dag_id for d in dags)
    for dag in stored.values():
        assert all(is_serialized(t) for t in dag.task_dict.values()), (
            "read back as Airflow's serialized tasks"
        )
    return stored


def test_the_findings_from_the_serialized_dags_are_those_from_the_dag_objects(serialized: list[str]) -> None:
    live = _representative()
    stored = _store(serialized, live)

    for dag in live:
        assert _facts(stored[dag.dag_id]) == _facts(dag), dag.dag_id
    from_objects = analyse(live, reference=REFERENCE)
    from_db = analyse([stored[d.dag_id] for d in live], reference=REFERENCE)
    assert from_db.to_dict() == from_objects.to_dict()
    assert len(from_db.findings) > 20

    # Equal because the serialized DAG holds the values, not because both readings lost them.
    facts = _facts(stored[WRITES]) | _facts(stored[NIGHTLY])
    assert (facts["merge_unpinned"].label, facts["merge_unpinned"].mapped) == (
        "MERGE without partition pin",
        True,
    )
    assert facts["merge_unpinned"].max_active_tis_per_dag == 2
    assert facts["merge_defaulted"].label == MERGE_AUTO  # the DAG's default_args
    assert facts["merge_pinned"].label == "MERGE pinned on date"
    assert facts["append"].op is OpKind.SCHEMA_CHANGE and facts["append"].partition_by == ("date",)
    optimize = facts["maintenance.optimize"]
    assert (optimize.label, optimize.scope.kind, optimize.profile) == (
        "OPTIMIZE ZORDER BY",
        "literal",
        EngineProfile.DATABRICKS_WRITE_SERIALIZABLE,
    )
    assert optimize.traits is not None and optimize.traits.deletion_vectors
    assert facts["optimize_each"].traits == optimize.traits
    vacuum = facts["maintenance.vacuum"]
    assert (vacuum.retention_hours, vacuum.force, vacuum.gated) == (200.0, True, True)
    assert facts["sql_insert"].op is OpKind.BLIND_APPEND and facts["sql_alter"].op is OpKind.SCHEMA_CHANGE
    assert facts["append_xcom"].notes == ("source comes from the XCom of append",)
    assert facts["append_xcom"].uses_lease is False
    assert (facts["append_function"].scope.kind, facts["append_function"].notes) == ("source", ())
    assert facts["overwrite"].scope.kind == "unknown" and "templated" in facts["overwrite"].notes[0]


def test_the_example_dags_read_the_same_from_the_serialized_dag_table(serialized: list[str]) -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS_FOLDER))
    assert not bag.import_errors, bag.import_errors
    live = [bag.dags[dag_id] for dag_id in sorted(bag.dags)]
    stored = _store(serialized, live)

    assert sum(len(_facts(d)) for d in live) > 40
    for dag in live:
        assert _facts(stored[dag.dag_id]) == _facts(dag), dag.dag_id
    from_db = analyse([stored[d.dag_id] for d in live], reference=REFERENCE)
    assert from_db.to_dict() == analyse(live, reference=REFERENCE).to_dict()


def test_every_argument_the_advisor_reads_is_in_the_serialized_dag(monkeypatch: pytest.MonkeyPatch) -> None:
    """A template field, a field Airflow serializes for every operator, or one of the operator's
    ``advisor_arguments``: an argument read from nowhere else would silently read as None in the api-server.
    (A name the operator does not have, such as a maintenance operator's ``use_write_lease``, is None in
    both.)"""
    from airflow.sdk import DAG
    from airflow.serialization.definitions.baseoperator import SerializedBaseOperator

    read: list[str] = []
    original = advisor_tasks.argument

    def recording(task: Any, name: str) -> Any:
        read.append(name)
        return original(task, name)

    monkeypatch.setattr(advisor_tasks, "argument", recording)
    source = rows("2026-11-01", 1)
    with DAG("arguments", schedule=None, start_date=datetime(2026, 1, 1)):
        operators = [
            DeltaAppendOperator(task_id="append", table=T, source=source),
            DeltaOverwritePartitionsOperator(task_id="overwrite", table=T, source=source),
            DeltaMergeOperator(task_id="merge", table=T, source=source, keys=["id"]),
            DeltaMergeOperator(task_id="merge_condition", table=T, source=source, condition="t.id = s.id"),
            DeltaUpdateOperator(task_id="update", table=T, set_values={"v": "y"}),
            DeltaDeleteOperator(task_id="delete", table=T, condition="true"),
            DeltaSqlOperator(task_id="sql", table=T, statement="DELETE FROM {table}"),
            DeltaOptimizeOperator(task_id="optimize", table=T),
            DeltaVacuumOperator(task_id="vacuum", table=T),
        ]
    for operator in operators:
        read.clear()
        task_facts(operator)
        stored = {*operator.template_fields, *operator.advisor_arguments}
        stored |= SerializedBaseOperator.get_serialized_fields()
        has = {name for name in read if hasattr(operator, name)}
        assert has and has <= stored, (type(operator).__name__, has - stored)


def test_a_value_kept_only_as_text_or_truncated_reads_as_decided_at_run_time(serialized: list[str]) -> None:
    """Airflow stores a template field's timestamp as its text and cuts a long one short: the serialized
    reading is then no more hopeful than the DAG object's (a cautious guess, never a wrong literal)."""
    from airflow.sdk import DAG

    many = {"kind": "rows", "rows": [[i, "2026-11-02", "x" * 20] for i in range(300)], "schema": SCHEMA}
    with DAG("ser_advisor_text", schedule=None, start_date=datetime(2026, 1, 1)) as live:
        DeltaUpdateOperator(
            task_id="update",
            table=T,
            set_values={"v": "y"},
            partition_values=[{"date": datetime(2026, 11, 1)}],
        )
        DeltaMergeOperator(task_id="merge", table=T, source=many, keys=["id"], partition_pin=["date"])
    facts = _facts(_store(serialized, [live])["ser_advisor_text"])

    assert _facts(live)["update"].scope.kind == "unknown"  # a timestamp's partition string is not predicted
    update = facts["update"]
    assert update.scope.kind == "unknown" and "only as text" in update.scope.note
    assert _facts(live)["merge"].scope.kind == "rows"
    merge = facts["merge"]
    assert (merge.label, merge.scope.kind) == ("MERGE pinned on date", "source")
    assert merge.notes == ("source is too long for the serialized DAG ([core] max_templated_field_length)",)


def test_the_truncation_prefix_is_airflows() -> None:
    from airflow._shared.template_rendering import TRUNCATE_PREFIX

    assert TRUNCATED == TRUNCATE_PREFIX


def _serialized_in_memory(dag: Any, edit: Any) -> Any:
    """``dag`` through Airflow's serializer and back, with ``edit(task_dict)`` applied to each stored task."""
    from airflow.serialization.serialized_objects import DagSerialization

    data = json.loads(json.dumps(DagSerialization.to_dict(dag)))
    for task in data["dag"]["tasks"]:
        edit(task["__var"])
    return DagSerialization.from_dict(data)


def test_a_dag_serialized_before_the_operators_stored_their_arguments_reads_them_as_unknown() -> None:
    from airflow.sdk import DAG

    with DAG("ser_advisor_old", schedule=None, start_date=datetime(2026, 1, 1)) as live:
        DeltaMergeOperator(task_id="merge", table=T, source=rows("2026-11-01", 1), keys=["id"])
    (merge,) = _facts(_serialized_in_memory(live, lambda task: task.pop("advisor_json"))).values()
    # Not the default "keyed" (nor None, no pin): the worst case, and the note says why.
    assert (merge.label, merge.scope.kind) == ("MERGE (pin decided at run time)", "unknown")
    assert merge.notes == (
        "partition_pin is not in the serialized DAG (serialized by an older provider version)",
    )


class RenamedMerge(DeltaMergeOperator):
    """A user's subclass; the tests move it to a module the api-server must not import."""


def test_a_subclass_from_a_module_the_api_server_does_not_import_reads_as_its_provider_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk import DAG

    marker = tmp_path / "imported"
    module = "deltacc_test_dag_module"
    (tmp_path / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with DAG("ser_advisor_subclass", schedule=None, start_date=datetime(2026, 1, 1)) as live:
        RenamedMerge(task_id="merge", table=T, source=rows("2026-11-01", 1), keys=["id"], partition_pin=None)

    def elsewhere(task: dict[str, Any]) -> None:
        task["_task_module"] = module

    stored = _serialized_in_memory(live, elsewhere)
    ((_, facts),) = _facts(stored).items()
    assert not marker.exists() and module not in sys.modules, "the task's module was imported"
    assert facts == TaskFacts(**{**vars(_facts(live)["merge"]), "operator": "DeltaMergeOperator"})
    assert facts.label == "MERGE without partition pin"


def test_an_explicit_none_pin_in_partial_is_passed_on_as_no_pin() -> None:
    """Airflow drops a None partial argument from the serialized DAG: ``[]`` is no pin for the job and the
    lease too, and the serialized DAG keeps it."""
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("ser_advisor_none", schedule=None, start_date=datetime(2026, 1, 1)) as live:
        DeltaMergeOperator.partial(task_id="merge", table=T, keys=["id"], partition_pin=None).expand(
            source=[rows("2026-11-01", 1)]
        )
    (task,) = DagSerialization.to_dict(live)["dag"]["tasks"]
    assert task["__var"]["partial_kwargs"]["partition_pin"] == []
    unmapped = live.task_dict["merge"].unmap({"source": rows("2026-11-01", 1)})
    assert isinstance(unmapped, DeltaMergeOperator)
    assert unmapped.build_options({}).partition_pin is None
    assert task_facts(live.task_dict["merge"]).label == "MERGE without partition pin"
