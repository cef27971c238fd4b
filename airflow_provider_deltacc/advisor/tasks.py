"""What one provider task does to its table, read from its arguments: operation, table, partitions.

Nothing runs: the operation kind comes from the operation registry
(:func:`~airflow_provider_deltacc.contract.op_kinds.op_kind`) on the task's options, the partitions from
``partition_values``, a MERGE's ``partition_pin`` and keys, or inline source rows. Arguments known only at run
time make the table or partitions unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.advisor.arguments import RunTime, argument, is_mapped, operator_class
from airflow_provider_deltacc.advisor.scopes import WHOLE, Scope, literal_scope
from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.ddl import ddl_column_names
from airflow_provider_deltacc.contract.op_kinds import OpKind, op_kind, statement_kind
from airflow_provider_deltacc.contract.operations import OPERATIONS
from airflow_provider_deltacc.delta_log.table_facts import canonical_partition_value

#: Labels of MERGEs pinned by their keys / on every partition column (resolved with the partition columns).
MERGE_KEYED = "MERGE pinned by its partition-column keys"
MERGE_AUTO = "MERGE pinned on every partition column"


@dataclass(frozen=True)
class TaskFacts:
    """One provider task as the advisor sees it.

    :param dag_id: its DAG.
    :param task_id: its task id (with the task group prefix).
    :param operator: its operator class name.
    :param op: the conflict-matrix operation.
    :param label: how reasons name the operation, e.g. ``MERGE without partition pin``.
    :param table: the table, or None when it is decided at run time.
    :param scope: the partitions it reads/writes.
    :param mapped: it is a mapped task (its instances run concurrently).
    :param max_active_tis_per_dag: its concurrency limit across runs and map indexes, if set.
    :param profile: the engine profile its arguments name (maintenance operators), if any.
    :param traits: the table traits its arguments name (maintenance operators), if any.
    :param gated: a provider maintenance operator: it waits for writer leases before it runs.
    :param uses_lease: a writer that takes a write lease (the gate sees it).
    :param partition_by: partition columns it creates the table with (appends).
    :param cluster_by: clustering columns it creates the table with (appends): the table is clustered.
    :param merge_keys: a MERGE's keys (a keyed pin uses those that are partition columns).
    :param retention_hours: VACUUM's retention, when given.
    :param force: VACUUM's ``force``.
    :param notes: what the advisor had to assume (templated or mapped arguments).
    """

    dag_id: str
    task_id: str
    operator: str
    op: OpKind
    label: str
    table: str | None
    scope: Scope
    mapped: bool = False
    max_active_tis_per_dag: int | None = None
    profile: EngineProfile | None = None
    traits: TableTraits | None = None
    gated: bool = False
    uses_lease: bool = True
    partition_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    merge_keys: tuple[str, ...] = ()
    retention_hours: float | None = None
    force: bool = False
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``dag_id.task_id``."""
        return f"{self.dag_id}.{self.task_id}"


def is_provider_task(task: Any) -> bool:
    """Whether ``task`` is a provider write or maintenance task (a ``DeltaBaseOperator``)."""
    from airflow_provider_deltacc.operators.base import DeltaBaseOperator

    cls = operator_class(task)
    return isinstance(cls, type) and issubclass(cls, DeltaBaseOperator)


def _rows_scope(source: Any, notes: list[str]) -> Scope | None:
    """The scope of inline rows, as column -> Delta's partition string (unpredictable values dropped)."""
    if isinstance(source, RunTime):
        notes.append(source.why)
        return None
    if not isinstance(source, Mapping) or source.get("kind") != "rows" or not source.get("rows"):
        return None
    names = ddl_column_names(str(source.get("schema") or ""))
    rows: list[dict[str, str]] = []
    for row in source["rows"]:
        pairs = row.items() if isinstance(row, Mapping) else zip(names, row, strict=False)
        text = {str(k): v for k, v in ((k, canonical_partition_value(v)) for k, v in pairs) if v is not None}
        rows.append(text)
    return Scope("rows", tuple(rows))


def _literal(value: Any, name: str, notes: list[str]) -> Scope | None:
    """A literal ``partition_values`` scope; None when not given; unknown when decided at run time."""
    if isinstance(value, RunTime):
        notes.append(value.why)
        return Scope("unknown", note=value.why)
    if not value:
        return None
    specs: list[dict[str, str]] = []
    for entry in value if isinstance(value, list | tuple) else [value]:
        if not isinstance(entry, Mapping) or not entry:
            return Scope("unknown", note=f"{name}={value!r} is not a list of partition specs")
        spec = {str(column): canonical_partition_value(v) for column, v in entry.items()}
        if any(v is None for v in spec.values()):
            return Scope("unknown", note=f"{name} has values whose partition strings cannot be predicted")
        specs.append({k: str(v) for k, v in spec.items()})
    return literal_scope(specs)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    return ()


def _merge(task: Any, notes: list[str]) -> tuple[str, Scope]:
    """A MERGE's scope; ``Scope.columns`` holds an explicit pin list, the label says keyed/auto."""
    pin, condition = argument(task, "partition_pin"), argument(task, "condition")
    if isinstance(pin, RunTime):
        notes.append(pin.why)
        return "MERGE (pin decided at run time)", Scope("unknown", note=pin.why)
    if pin is None or (isinstance(pin, list | tuple) and not pin):  # [] pins nothing either (the job's null)
        return "MERGE without partition pin", WHOLE
    if pin == "keyed" and condition and not isinstance(condition, RunTime):
        return "MERGE with an explicit ON condition (not pinned)", WHOLE
    rows = _rows_scope(argument(task, "source"), notes)
    kind = rows.kind if rows is not None else "source"
    specs = rows.specs if rows is not None else ()
    if pin == "keyed":
        return MERGE_KEYED, Scope(kind, specs)
    if pin == "auto":
        return MERGE_AUTO, Scope(kind, specs)
    columns = _strings(pin)
    return f"MERGE pinned on {', '.join(columns)}", Scope(kind, specs, columns)


def _operation(task: Any, cls: type, notes: list[str]) -> tuple[OpKind, str, Scope]:
    name = getattr(cls, "operation", "")
    if name == "append":
        merge_schema = argument(task, "merge_schema")
        op = op_kind("append", {"merge_schema": bool(merge_schema)})
        rows = _rows_scope(argument(task, "source"), notes)
        label = "schema-changing append (merge_schema)" if op is OpKind.SCHEMA_CHANGE else "blind append"
        return op, label, rows if rows is not None else Scope("source")
    if name == "overwrite_partitions":
        scope = _literal(argument(task, "partition_values"), "partition_values", notes)
        if scope is None:
            scope = _rows_scope(argument(task, "source"), notes) or Scope("source")
        return OpKind.OVERWRITE, "partition overwrite", scope
    if name == "merge":
        label, scope = _merge(task, notes)
        return OpKind.MERGE, label, scope
    if name in ("update", "delete"):
        scope = _literal(argument(task, "partition_values"), "partition_values", notes)
        if scope is None:
            if argument(task, "condition") or argument(task, "equals"):
                why = "its condition is not analysed; only partition_values narrow it for the advisor"
                scope = Scope("unknown", note=why)
            else:
                scope = WHOLE
        return op_kind(name), OPERATIONS[name].verb, scope
    if name == "sql":
        return _sql(task, notes)
    if name == "optimize":
        zorder = argument(task, "zorder_by")
        op = op_kind("optimize", {"zorder_by": zorder})
        scope = _literal(argument(task, "partition_values"), "partition_values", notes) or WHOLE
        return op, "OPTIMIZE ZORDER BY" if zorder else "OPTIMIZE", scope
    if name == "vacuum":
        return OpKind.VACUUM, "VACUUM", WHOLE
    why = f"unknown provider operation {name!r}; assumed to be a MERGE of the whole table"
    notes.append(why)
    return OpKind.MERGE, f"{name or cls.__name__} (treated as MERGE)", WHOLE


def _sql(task: Any, notes: list[str]) -> tuple[OpKind, str, Scope]:
    statement, op_class = argument(task, "statement"), argument(task, "op_class")
    if isinstance(statement, RunTime) or str(statement).strip().lower().endswith(".sql"):
        why = statement.why if isinstance(statement, RunTime) else "the statement is a templated .sql file"
        notes.append(f"{why}: assumed to be a MERGE, the kind that conflicts with the most")
        return OpKind.MERGE, "SQL statement (treated as MERGE)", Scope("unknown", note=why)
    if statement_kind(str(statement)) is OpKind.VACUUM:
        return OpKind.VACUUM, "SQL VACUUM (not gated)", WHOLE
    options = {"statement": str(statement), "op_class": None if isinstance(op_class, RunTime) else op_class}
    op = op_kind("sql", options)
    verb = str(statement).split(None, 1)[0].upper() if str(statement).strip() else "SQL"
    why = "the SQL statement's partitions are not analysed"
    scope = Scope("source") if op is OpKind.BLIND_APPEND else Scope("unknown", note=why)
    return op, f"SQL {verb}", scope


def _maintenance_settings(task: Any) -> tuple[EngineProfile | None, TableTraits | None]:
    from airflow_provider_deltacc.gate.request import parse_profile, parse_traits

    profile, traits = argument(task, "profile"), argument(task, "table_traits")
    try:
        parsed_profile = parse_profile(profile) if isinstance(profile, str | EngineProfile) else None
        parsed_traits = parse_traits(traits) if isinstance(traits, Mapping | TableTraits) else None
    except ValueError:
        return None, None
    return parsed_profile, parsed_traits


def _is_maintenance(name: str) -> bool:
    known = OPERATIONS.get(name)
    return known is not None and known.is_maintenance


def _number(value: Any) -> float | None:
    try:
        return None if value in (None, "") or isinstance(value, RunTime | bool) else float(value)
    except (TypeError, ValueError):
        return None


def task_facts(task: Any) -> TaskFacts:
    """Describe one provider task (see :func:`is_provider_task`).

    :param task: a plain or mapped ``DeltaBaseOperator`` task.
    """
    cls = operator_class(task)
    notes: list[str] = []
    op, label, scope = _operation(task, cls, notes)
    table = argument(task, "table")
    if isinstance(table, RunTime) or not isinstance(table, str):
        notes.append(
            f"{table.why if isinstance(table, RunTime) else 'table is not a string'}: assumed to be "
            "every table the other tasks write"
        )
        table = None
    profile, traits = (None, None)
    gated = _is_maintenance(getattr(cls, "operation", ""))
    if gated:
        profile, traits = _maintenance_settings(task)
    limit = argument(task, "max_active_tis_per_dag")
    appends = getattr(cls, "operation", "") == "append"
    partition_by = argument(task, "partition_by") if appends else None
    return TaskFacts(
        dag_id=str(getattr(getattr(task, "dag", None), "dag_id", "") or getattr(task, "dag_id", "")),
        task_id=str(task.task_id),
        operator=cls.__name__,
        op=op,
        label=label,
        table=table,
        scope=scope,
        mapped=is_mapped(task),
        max_active_tis_per_dag=limit if isinstance(limit, int) else None,
        profile=profile,
        traits=traits,
        gated=gated,
        uses_lease=argument(task, "use_write_lease") is not False,
        partition_by=_strings(partition_by),
        cluster_by=_strings(argument(task, "cluster_by")) if appends else (),
        merge_keys=_strings(argument(task, "keys")) if op is OpKind.MERGE else (),
        retention_hours=_number(argument(task, "retention_hours")) if op is OpKind.VACUUM else None,
        force=argument(task, "force") is True if op is OpKind.VACUUM else False,
        notes=tuple(dict.fromkeys(notes)),
    )


def table_partition_columns(facts: Sequence[TaskFacts]) -> list[str]:
    """The partition columns the tasks of one table reveal: ``partition_by`` and literal partition specs."""
    columns: list[str] = []
    for fact in facts:
        named = list(fact.partition_by)
        if fact.op is OpKind.MERGE:
            named += list(fact.scope.columns)
        if fact.scope.kind == "literal":
            named += [column for spec in fact.scope.specs for column in spec]
        for column in named:
            if column.lower() not in {c.lower() for c in columns}:
                columns.append(column)
    return columns
