"""Parse-time checks shared by the task-group factories: pure Python, no Spark, errors name the argument."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_deltacc.contract.ddl import split_ddl_columns
from airflow_provider_deltacc.exceptions import DeltaCCInputError


def fail(factory: str, argument: str, value: Any, problem: str) -> DeltaCCInputError:
    """The error for one bad argument: ``factory(argument=value): problem``."""
    return DeltaCCInputError(f"{factory}({argument}={value!r}): {problem}", field=argument, value=value)


def is_templated(value: Any) -> bool:
    """True when the value is a Jinja template (checked only once rendered, at run time)."""
    return isinstance(value, str) and "{{" in value


def table_argument(factory: str, argument: str, value: Any) -> str:
    """A table path or catalog name: a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise fail(factory, argument, value, "give the table's path or catalog name as a non-empty string")
    return value


def column_list(factory: str, argument: str, value: Any, *, required: bool = False) -> list[str]:
    """A list of distinct, non-empty column names (a lone string is refused: it is a common slip)."""
    if value is None:
        if required:
            raise fail(factory, argument, value, "give a non-empty list of column names")
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise fail(factory, argument, value, f"must be a list of column names, e.g. [{value!r}]")
    names = list(value)
    if required and not names:
        raise fail(factory, argument, value, "give at least one column")
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise fail(factory, argument, value, f"{name!r} is not a column name")
    lowered = [n.lower() for n in names]
    duplicates = sorted({n for n in lowered if lowered.count(n) > 1})
    if duplicates:
        raise fail(factory, argument, value, f"lists {duplicates} more than once")
    return names


def boolean(factory: str, argument: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise fail(factory, argument, value, "must be True or False")
    return value


def ddl_columns(factory: str, argument: str, schema: Any) -> list[str]:
    """The top-level column names of a DDL schema such as ``"id BIGINT, amount DECIMAL(10,2), tags
    ARRAY<STRING>"`` (commas inside ``()``/``<>`` and backticked names are handled)."""
    if not isinstance(schema, str) or not schema.strip():
        raise fail(
            factory, argument, schema, "give the rows' columns as a DDL string, e.g. 'id BIGINT, day DATE'"
        )
    try:
        names = [name for name, _ in split_ddl_columns(schema)]
    except ValueError as exc:
        raise fail(factory, argument, schema, str(exc)) from None
    lowered = [n.lower() for n in names]
    duplicates = sorted({n for n in lowered if lowered.count(n) > 1})
    if duplicates:
        raise fail(factory, argument, schema, f"defines {duplicates} more than once")
    return names


def require_columns(
    factory: str, argument: str, value: Any, columns: Sequence[str], known: Sequence[str], where: str
) -> None:
    """Every column must be one of ``known`` (case-insensitive, as Spark resolves them)."""
    lowered = {k.lower() for k in known}
    missing = [c for c in columns if c.lower() not in lowered]
    if missing:
        raise fail(factory, argument, value, f"{missing} not in {where} (it has {list(known)})")


def conn_id_argument(factory: str, argument: str, value: Any) -> str | None:
    """An Airflow connection id (a non-empty string) or None."""
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise fail(factory, argument, value, "give an Airflow connection id, or None")
    return value
