"""The row filter of UPDATE and DELETE: a user condition, ``equals`` literals and pinned partitions, ANDed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_deltacc.contract.exceptions import InputError, LiteralError
from airflow_provider_deltacc.contract.literals import embedded_expression, equals_predicate, quote_identifier
from airflow_provider_deltacc.engine.operations.base import check_columns
from airflow_provider_deltacc.engine.pinning import (
    PartitionValues,
    check_partition_values,
    partition_predicate,
)
from airflow_provider_deltacc.engine.table import TableState


def row_filter(
    state: TableState,
    *,
    condition: str | None,
    equals: Mapping[str, Any],
    partition_values: PartitionValues | None,
    escaped: bool,
) -> str | None:
    """Return the combined SQL filter, or None when no filter was given.

    :param state: the target snapshot (column names and types).
    :param condition: a SQL condition written by the user, used as is.
    :param equals: column to value, each quoted as a literal of the column's type.
    :param partition_values: partitions to restrict to.
    :param escaped: the session's ``spark.sql.parser.escapedStringLiterals``.
    :raises InputError: on an unknown column or a value that does not fit its column.
    """
    parts: list[str] = []
    if condition is not None:
        parts.append(embedded_expression(condition))
    for name, actual in check_columns(equals, state, "options.equals").items():
        data_type = state.column_type(actual)
        assert data_type is not None
        try:
            parts.append(equals_predicate(quote_identifier(actual), equals[name], data_type, escaped=escaped))
        except LiteralError as exc:
            raise InputError(f"options.equals.{name}", equals[name], str(exc)) from None
    if partition_values is not None:
        values = check_partition_values(partition_values, state)
        parts.append(partition_predicate(values, state, escaped=escaped))
    return " AND ".join(parts) if parts else None
