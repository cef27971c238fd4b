"""The typed options of a job spec's operation: built from their parts by the operators and ``conflict_safe``
(one factory an operation), or read from their dict form (the JSON the Spark driver reads).

Every problem raises :class:`~airflow_provider_deltacc.contract.exceptions.SpecError` naming the field
(``options.<key>``), the bad value and the fix; the factories and the dict form say the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.contract.spec import (
    DEFAULT_WHEN_MATCHED,
    DEFAULT_WHEN_NOT_MATCHED,
    PARTITION_AND_CLUSTER,
    AppendOptions,
    DeleteOptions,
    MergeClause,
    MergeOptions,
    OperationOptions,
    OptimizeOptions,
    OverwritePartitionsOptions,
    SqlOptions,
    UpdateOptions,
    VacuumOptions,
)
from airflow_provider_deltacc.contract.spec_fields import Fields, check_one_statement

__all__ = [
    "MAX_RETENTION_HOURS",
    "OPTION_TYPES",
    "append_options",
    "delete_options",
    "merge_options",
    "optimize_options",
    "options_of",
    "overwrite_partitions_options",
    "sql_options",
    "update_options",
    "vacuum_options",
]

#: The longest VACUUM retention accepted (100 years); beyond it Delta's millisecond arithmetic overflows.
MAX_RETENTION_HOURS = 876_000.0
_PATH = "options"
_Options = TypeVar("_Options", bound=OperationOptions)


def append_options(
    *,
    create_if_missing: bool | None = None,
    partition_by: Sequence[str] | None = None,
    merge_schema: bool | None = None,
    cluster_by: Sequence[str] | None = None,
) -> AppendOptions:
    """The options of ``append`` (None: the default; see :class:`AppendOptions`).

    :param create_if_missing: create the table when it does not exist.
    :param partition_by: partition columns for a table this append creates.
    :param merge_schema: add new source columns to the table.
    :param cluster_by: liquid-clustering columns for a table this append creates.
    :raises SpecError: naming the option.
    """
    return _checked(_append(_given(locals())))


def overwrite_partitions_options(
    *, partition_values: Sequence[Mapping[str, Any]] | None = None, max_partitions: int | None = None
) -> OverwritePartitionsOptions:
    """The options of ``overwrite_partitions`` (see :class:`OverwritePartitionsOptions`).

    :param partition_values: the partitions to replace; None: the source's distinct partitions.
    :param max_partitions: the most distinct source partitions allowed when they are derived.
    :raises SpecError: naming the option.
    """
    return _overwrite(_given(locals()))


def merge_options(
    *,
    keys: Sequence[str] | None = None,
    condition: str | None = None,
    when_matched: Sequence[Mapping[str, Any]] | None = None,
    when_not_matched: Sequence[Mapping[str, Any]] | None = None,
    dedup_order_by: str | None = None,
    dedup_keys: Sequence[str] | None = None,
    partition_pin: str | Sequence[str] | None = "keyed",
    max_pin_values: int | None = None,
) -> MergeOptions:
    """The options of ``merge`` (see :class:`MergeOptions`); ``partition_pin=None`` pins nothing.

    :param keys: key columns.
    :param condition: an explicit ON condition instead of ``keys``.
    :param when_matched: the matched clauses, e.g. ``[{"action": "update"}]``.
    :param when_not_matched: the not-matched clauses.
    :param dedup_order_by: keep one source row per key, the greatest by this column.
    :param dedup_keys: the key for de-duplication.
    :param partition_pin: ``"keyed"``, ``"auto"``, a list of partition columns, or None.
    :param max_pin_values: the most distinct source partitions a pin may list.
    :raises SpecError: naming the option.
    """
    given = locals()
    fields = _given(given)
    fields.data["partition_pin"] = given["partition_pin"]
    return _merge(fields)


def update_options(
    *,
    set: Mapping[str, str] | None = None,
    set_values: Mapping[str, Any] | None = None,
    condition: str | None = None,
    equals: Mapping[str, Any] | None = None,
    partition_values: Sequence[Mapping[str, Any]] | None = None,
) -> UpdateOptions:
    """The options of ``update`` (see :class:`UpdateOptions`).

    :param set: column to SQL expression.
    :param set_values: column to a plain value.
    :param condition: a SQL condition.
    :param equals: column to value.
    :param partition_values: partitions to restrict the update to.
    :raises SpecError: naming the option.
    """
    return _update(_given(locals()))


def delete_options(
    *,
    condition: str | None = None,
    equals: Mapping[str, Any] | None = None,
    partition_values: Sequence[Mapping[str, Any]] | None = None,
) -> DeleteOptions:
    """The options of ``delete`` (see :class:`DeleteOptions`).

    :param condition: a SQL condition.
    :param equals: column to value.
    :param partition_values: partitions to restrict the delete to.
    :raises SpecError: naming the option.
    """
    return _delete(_given(locals()))


def optimize_options(
    *,
    partition_values: Sequence[Mapping[str, Any]] | None = None,
    zorder_by: Sequence[str] | None = None,
    full: bool | None = None,
) -> OptimizeOptions:
    """The options of ``optimize`` (see :class:`OptimizeOptions`).

    :param partition_values: compact only these partitions.
    :param zorder_by: Z-order by these columns.
    :param full: ``OPTIMIZE ... FULL`` of a liquid-clustered table.
    :raises SpecError: naming the option.
    """
    return _checked(_optimize(_given(locals())))


def vacuum_options(
    *, retention_hours: float | None = None, force: bool | None = None, dry_run: bool | None = None
) -> VacuumOptions:
    """The options of ``vacuum`` (see :class:`VacuumOptions`).

    :param retention_hours: keep removed files younger than this; None: the table's retention.
    :param force: allow a retention below the table's.
    :param dry_run: list what would be deleted, delete nothing.
    :raises SpecError: naming the option.
    """
    return _vacuum(_given(locals()))


def sql_options(
    *, statement: str, args: Mapping[str, Any] | None = None, op_class: str | None = None
) -> SqlOptions:
    """The options of ``sql`` (see :class:`SqlOptions`).

    :param statement: one SQL statement.
    :param args: named parameters bound by Spark.
    :param op_class: what the statement does (an :class:`OperationClass` value).
    :raises SpecError: naming the option.
    """
    return _sql(_given(locals()))


def options_of(operation: str, raw: Any) -> OperationOptions:
    """An operation's options in their dict form (None reads as no options).

    :param operation: a known operation.
    :param raw: the dict form.
    :raises SpecError: on the first problem found.
    """
    return _checked(_READERS[operation](Fields(raw or {}, _PATH)))


def _given(arguments: dict[str, Any]) -> Fields:
    """The options a factory was given, as its dict form: the arguments that are not None."""
    return Fields({key: value for key, value in arguments.items() if value is not None}, _PATH)


def _append(f: Fields) -> AppendOptions:
    f.only(("create_if_missing", "partition_by", "merge_schema", "cluster_by"), "append options")
    return AppendOptions(
        create_if_missing=f.boolean("create_if_missing", True),
        partition_by=f.strings("partition_by"),
        merge_schema=f.boolean("merge_schema", False),
        cluster_by=f.strings("cluster_by"),
    )


def _overwrite(f: Fields) -> OverwritePartitionsOptions:
    f.only(("partition_values", "max_partitions"), "overwrite_partitions options")
    max_partitions = f.integer("max_partitions", 1000, minimum=1)
    assert max_partitions is not None
    return OverwritePartitionsOptions(
        partition_values=f.partition_values("partition_values"), max_partitions=max_partitions
    )


def _merge(f: Fields) -> MergeOptions:
    f.only(
        (
            "keys",
            "condition",
            "when_matched",
            "when_not_matched",
            "dedup_order_by",
            "dedup_keys",
            "partition_pin",
            "max_pin_values",
        ),
        "merge options",
    )
    keys, condition = f.strings("keys"), f.sql("condition")
    if bool(keys) == (condition is not None):
        raise SpecError(
            "options.keys", list(keys) or None, "give exactly one of keys (a list of columns) or condition"
        )
    matched = _clauses(f, "when_matched", ("update", "delete"), "set", DEFAULT_WHEN_MATCHED)
    not_matched = _clauses(f, "when_not_matched", ("insert",), "values", DEFAULT_WHEN_NOT_MATCHED)
    if not matched and not not_matched:
        raise SpecError(
            "options.when_matched", [], "a MERGE needs at least one when_matched or when_not_matched"
        )
    dedup_order_by, dedup_keys = f.string("dedup_order_by"), f.strings("dedup_keys")
    if dedup_order_by is not None and not (dedup_keys or keys):
        raise SpecError("options.dedup_keys", None, "dedup_order_by with a condition needs dedup_keys")
    if dedup_keys and dedup_order_by is None:
        raise SpecError(
            "options.dedup_order_by", None, "dedup_keys needs dedup_order_by (the 'latest' column)"
        )
    max_pin_values = f.integer("max_pin_values", 1000, minimum=1)
    assert max_pin_values is not None
    return MergeOptions(
        keys=keys,
        condition=condition,
        when_matched=matched,
        when_not_matched=not_matched,
        dedup_order_by=dedup_order_by,
        dedup_keys=dedup_keys,
        partition_pin=_pin(f),
        max_pin_values=max_pin_values,
    )


def _pin(f: Fields) -> tuple[str, ...] | Literal["auto", "keyed"] | None:
    if "partition_pin" not in f.data:
        return "keyed"
    raw = f.data["partition_pin"]
    if raw is None:
        return None
    if isinstance(raw, str):
        if raw == "auto":
            return "auto"
        if raw == "keyed":
            return "keyed"
        raise SpecError("options.partition_pin", raw, 'must be "auto", "keyed", a list of columns or null')
    return f.strings("partition_pin") or None


def _clauses(
    f: Fields, key: str, actions: tuple[str, ...], assign_key: str, default: tuple[MergeClause, ...]
) -> tuple[MergeClause, ...]:
    items = f.objects(key)
    if items is None:
        return default
    clauses: list[MergeClause] = []
    for item in items:
        item.only(("action", "condition", assign_key), f"a {key} clause")
        action = item.data.get("action")
        if action not in actions:
            raise SpecError(item.name("action"), action, f"must be one of {', '.join(actions)}")
        if action == "delete" and item.has(assign_key):
            raise SpecError(item.name(assign_key), item.data[assign_key], "a delete clause sets nothing")
        assignments = item.mapping(assign_key, values="sql") if item.has(assign_key) else None
        if assignments is not None and not assignments:
            raise SpecError(item.name(assign_key), {}, "must set at least one column, or be omitted for all")
        clauses.append(MergeClause(action, item.sql("condition"), assignments))
    return tuple(clauses)


def _update(f: Fields) -> UpdateOptions:
    f.only(("set", "set_values", "condition", "equals", "partition_values"), "update options")
    options = UpdateOptions(
        set=f.mapping("set", values="sql"),
        set_values=f.mapping("set_values", values="scalar"),
        condition=f.sql("condition"),
        equals=f.mapping("equals", values="scalar"),
        partition_values=f.partition_values("partition_values"),
    )
    if not options.set and not options.set_values:
        raise SpecError("options.set", None, "an update must set something: give set and/or set_values")
    overlap = sorted(set(options.set) & set(options.set_values))
    if overlap:
        raise SpecError(
            f"options.set_values.{overlap[0]}", options.set_values[overlap[0]], "also in set; keep one"
        )
    _require_filter(options.condition, options.equals, options.partition_values, "update")
    return options


def _delete(f: Fields) -> DeleteOptions:
    f.only(("condition", "equals", "partition_values"), "delete options")
    options = DeleteOptions(
        condition=f.sql("condition"),
        equals=f.mapping("equals", values="scalar"),
        partition_values=f.partition_values("partition_values"),
    )
    _require_filter(options.condition, options.equals, options.partition_values, "delete")
    return options


def _require_filter(condition: str | None, equals: dict[str, Any], partitions: Any, operation: str) -> None:
    if condition is None and not equals and partitions is None:
        raise SpecError(
            "options.condition",
            None,
            f"an unfiltered {operation} touches every row; give condition, equals or partition_values "
            '(use condition "true" to mean every row)',
        )


def _optimize(f: Fields) -> OptimizeOptions:
    f.only(("partition_values", "zorder_by", "full"), "optimize options")
    return OptimizeOptions(
        partition_values=f.partition_values("partition_values"),
        zorder_by=f.strings("zorder_by"),
        full=f.boolean("full", False),
    )


def _vacuum(f: Fields) -> VacuumOptions:
    f.only(("retention_hours", "force", "dry_run"), "vacuum options")
    retention = f.number("retention_hours")
    if retention is not None and retention > MAX_RETENTION_HOURS:
        raise SpecError(
            "options.retention_hours",
            retention,
            f"must be <= {MAX_RETENTION_HOURS:g} hours (100 years); omit it to use the table's "
            "delta.deletedFileRetentionDuration",
        )
    return VacuumOptions(
        retention_hours=retention,
        force=f.boolean("force", False),
        dry_run=f.boolean("dry_run", False),
    )


def _sql(f: Fields) -> SqlOptions:
    f.only(("statement", "args", "op_class"), "sql options")
    statement = f.sql("statement", required=True)
    assert statement is not None
    check_one_statement("options.statement", statement)
    op_class = f.data.get("op_class", OperationClass.READ_MODIFY_WRITE.value)
    valid = [c.value for c in OperationClass]
    if op_class not in valid:
        raise SpecError("options.op_class", op_class, f"must be one of {', '.join(valid)}")
    return SqlOptions(
        statement=statement, args=f.mapping("args", values="scalar"), op_class=OperationClass(op_class)
    )


def _checked(options: _Options) -> _Options:
    """``options`` once their fields agree with each other."""
    if isinstance(options, AppendOptions) and options.partition_by and options.cluster_by:
        raise SpecError(
            "options.cluster_by",
            {"partition_by": list(options.partition_by), "cluster_by": list(options.cluster_by)},
            PARTITION_AND_CLUSTER,
        )
    if (
        isinstance(options, OptimizeOptions)
        and options.full
        and (options.zorder_by or options.partition_values)
    ):
        raise SpecError(
            "options.full",
            True,
            "OPTIMIZE FULL reclusters a liquid-clustered table, which takes neither zorder_by nor "
            "partition_values; drop them (or drop full)",
        )
    if isinstance(options, AppendOptions) and options.partition_by and not options.create_if_missing:
        raise SpecError(
            "options.partition_by", list(options.partition_by), "only applies when create_if_missing is true"
        )
    return options


_READERS: dict[str, Callable[[Fields], OperationOptions]] = {
    "append": _append,
    "overwrite_partitions": _overwrite,
    "merge": _merge,
    "update": _update,
    "delete": _delete,
    "optimize": _optimize,
    "vacuum": _vacuum,
    "sql": _sql,
}

#: The options class of each operation.
OPTION_TYPES: dict[str, type] = {
    "append": AppendOptions,
    "overwrite_partitions": OverwritePartitionsOptions,
    "merge": MergeOptions,
    "update": UpdateOptions,
    "delete": DeleteOptions,
    "optimize": OptimizeOptions,
    "vacuum": VacuumOptions,
    "sql": SqlOptions,
}
