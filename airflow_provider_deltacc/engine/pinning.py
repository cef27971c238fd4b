"""Partition pinning: literal partition predicates that narrow what a MERGE/UPDATE/DELETE reads.

Delta decides conflicts by the partitions a transaction read. A MERGE whose ON clause only compares keys
reads the whole table, so any concurrent add anywhere fails it; with ``t.date IN (DATE '...')`` in the ON
clause it reads only its own partitions. The values come from the source (its distinct partition values,
collected, bounded by ``max_values``) or are given explicitly; every value goes through
:func:`~airflow_provider_deltacc.engine.literals.sql_literal` with the target column's type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError, LiteralError
from airflow_provider_deltacc.contract.literals import equals_predicate, in_predicate, quote_identifier
from airflow_provider_deltacc.engine.table import TableState

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

PinSpec = Sequence[str] | str | None
PartitionValues = tuple[dict[str, Any], ...]
#: An inline source: its schema and its rows, converted to the schema's Python types.
InlineRows = tuple["StructType", list[tuple[Any, ...]]]

#: Source column types whose Python values are exactly what collecting them from Spark gives back. Floats
#: (NaN, -0.0) and timestamps (zones) are compared and returned differently, so those still collect.
_INLINE_PIN_TYPES = ("string", "boolean", "byte", "short", "integer", "long", "decimal", "date")


def resolve_pin_columns(
    pin: PinSpec, state: TableState, field_name: str = "options.partition_pin"
) -> tuple[str, ...]:
    """Return the partition columns to pin, in the table's spelling.

    :param pin: a list of columns, ``"auto"`` (all partition columns) or None/``[]`` (no pin).
    :param state: the target table's snapshot.
    :param field_name: the spec field, for errors.
    :raises InputError: if a column is not a partition column of the table.
    """
    if pin is None:
        return ()
    if pin == "auto":
        return state.partition_columns
    if isinstance(pin, str):
        raise InputError(field_name, pin, 'must be a list of partition columns, "auto" or null')
    resolved: list[str] = []
    for index, column in enumerate(pin):
        actual = _partition_column(state, column)
        if actual is None:
            raise InputError(
                f"{field_name}[{index}]",
                column,
                "is not a partition column of the table; its partition columns are "
                f"{list(state.partition_columns)}{_NO_PARTITIONS if not state.partition_columns else ''}",
            )
        if actual not in resolved:
            resolved.append(actual)
    return tuple(resolved)


#: Said when a pin names a column of a table without partitions (e.g. a liquid-clustered one).
_NO_PARTITIONS = (
    " (an unpartitioned or liquid-clustered table cannot be pinned, and in open-source Delta predicates on "
    "clustering columns do not keep concurrent writers apart; drop the pin: docs/clustering.md says what "
    "protects such a table)"
)


def check_partition_values(
    values: Sequence[Mapping[str, Any]], state: TableState, field_name: str = "options.partition_values"
) -> PartitionValues:
    """Validate explicit partition values against the table and return them keyed by the table's spelling.

    :param values: one dict per partition, column to value (a subset of the partition columns).
    :param state: the target table's snapshot.
    :param field_name: the spec field, for errors.
    :raises InputError: on an unknown column or a value that is not valid for the column's type.
    """
    if not values:
        raise InputError(
            field_name, values, 'must list at least one partition, e.g. [{"date": "2026-11-20"}]'
        )
    checked: list[dict[str, Any]] = []
    for index, entry in enumerate(values):
        if not entry:
            raise InputError(f"{field_name}[{index}]", entry, "must name at least one partition column")
        row: dict[str, Any] = {}
        for column, value in entry.items():
            actual = _partition_column(state, column)
            if actual is None:
                raise InputError(
                    f"{field_name}[{index}].{column}",
                    value,
                    f"{column!r} is not a partition column of the table; its partition columns are "
                    f"{list(state.partition_columns)}{_NO_PARTITIONS if not state.partition_columns else ''}",
                )
            data_type = state.column_type(actual)
            assert data_type is not None
            try:
                equals_predicate("x", value, data_type)
            except LiteralError as exc:
                raise InputError(f"{field_name}[{index}].{column}", value, str(exc)) from None
            row[actual] = value
        checked.append(row)
    return tuple(checked)


def partition_predicate(
    values: PartitionValues, state: TableState, *, qualifier: str | None = None, escaped: bool = False
) -> str:
    """Return a SQL predicate matching exactly the given partitions.

    One column gives ``(`t`.`date` IN (DATE '2026-11-20') OR `t`.`date` IS NULL)``; several columns give an
    OR of per-partition conjunctions, which pins exact combinations rather than their cross product.

    :param values: the partitions (non-empty), keyed by the table's column spelling.
    :param state: the target table's snapshot (for the column types).
    :param qualifier: the target's alias in the statement, e.g. ``t``; None for bare column names.
    :param escaped: the session's ``spark.sql.parser.escapedStringLiterals``.
    """
    if not values:
        raise ValueError("partition_predicate needs at least one partition")
    columns = list(dict.fromkeys(c for row in values for c in row))

    def ref(column: str) -> str:
        quoted = quote_identifier(column)
        return f"{quote_identifier(qualifier)}.{quoted}" if qualifier else quoted

    def type_of(column: str) -> Any:
        data_type = state.column_type(column)
        assert data_type is not None
        return data_type

    if len(columns) == 1 and all(len(row) == 1 for row in values):
        column = columns[0]
        return in_predicate(ref(column), [row[column] for row in values], type_of(column), escaped=escaped)
    terms: list[str] = []
    for row in values:
        term = " AND ".join(equals_predicate(ref(c), v, type_of(c), escaped=escaped) for c, v in row.items())
        if f"({term})" not in terms:
            terms.append(f"({term})")
    return "(" + " OR ".join(terms) + ")"


def source_partition_values(
    source: DataFrame,
    columns: Sequence[str],
    *,
    max_values: int,
    field_name: str = "options.max_pin_values",
    inline: InlineRows | None = None,
) -> PartitionValues:
    """Collect the source's distinct values of ``columns`` (at most ``max_values`` of them).

    :param source: the source DataFrame; it must have the columns (case-insensitive).
    :param columns: the target's partition columns to pin, in the table's spelling.
    :param max_values: the most distinct combinations allowed.
    :param field_name: the spec field named by the error when there are too many.
    :param inline: the schema and rows ``source`` was built from, when it is an inline ``rows`` source
        with nothing applied on top; their values are read here instead of running a Spark job.
    :raises InputError: if the source has more distinct partitions than ``max_values``.
    """
    rows = _inline_values(inline, columns, max_values) if inline is not None else None
    if rows is None:
        source_names = {name.lower(): name for name in source.columns}
        selected = [source[source_names[c.lower()]].alias(c) for c in columns]
        rows = [row.asDict() for row in source.select(*selected).distinct().limit(max_values + 1).collect()]
    if len(rows) > max_values:
        raise InputError(
            field_name,
            max_values,
            f"the source spans more than {max_values} distinct partitions of {list(columns)}; raise "
            "max_pin_values, split the source, or turn pinning off",
        )
    return tuple({c: row[c] for c in columns} for row in rows)


def _inline_values(
    inline: InlineRows, columns: Sequence[str], max_values: int
) -> list[dict[str, Any]] | None:
    schema, rows = inline
    positions = {f.name.lower(): (i, f.dataType.typeName()) for i, f in enumerate(schema.fields)}
    picked = [positions.get(c.lower()) for c in columns]
    if any(p is None or p[1] not in _INLINE_PIN_TYPES for p in picked):
        return None
    indexes = [p[0] for p in picked if p is not None]
    distinct = dict.fromkeys(tuple(row[i] for i in indexes) for row in rows)
    return [dict(zip(columns, values, strict=True)) for values in list(distinct)[: max_values + 1]]


def source_filter(values: PartitionValues, source: DataFrame) -> Column:
    """Return a Column predicate keeping only source rows inside the pinned partitions.

    :param values: the pinned partitions (non-empty), as collected from this source.
    :param source: the source DataFrame.
    """
    source_names = {name.lower(): name for name in source.columns}
    columns = list(values[0])
    if len(columns) == 1:
        column = source[source_names[columns[0].lower()]]
        present = [row[columns[0]] for row in values if row[columns[0]] is not None]
        keep = column.isin(present) if present else None
        if len(present) < len(values):
            keep = column.isNull() if keep is None else keep | column.isNull()
        assert keep is not None
        return keep
    terms = [
        _balanced([source[source_names[c.lower()]].eqNullSafe(v) for c, v in row.items()], "and")
        for row in values
    ]
    return _balanced(terms, "or")


def _balanced(columns: list[Column], op: str) -> Column:
    # A balanced tree keeps Catalyst's recursion shallow for hundreds of partitions.
    if len(columns) == 1:
        return columns[0]
    middle = len(columns) // 2
    left, right = _balanced(columns[:middle], op), _balanced(columns[middle:], op)
    return (left & right) if op == "and" else (left | right)


def _partition_column(state: TableState, column: Any) -> str | None:
    if not isinstance(column, str):
        return None
    for name in state.partition_columns:
        if name.lower() == column.lower():
            return name
    return None
