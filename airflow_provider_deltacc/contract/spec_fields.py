"""Typed readers for one JSON object of the job spec; each failure names the dotted field path."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from airflow_provider_deltacc.contract.exceptions import SpecError, SqlTextError
from airflow_provider_deltacc.contract.redaction import REDACTED, is_sensitive_key
from airflow_provider_deltacc.contract.sql_text import split_statements

Scalar = str | int | float | bool | None


class Fields:
    """Read fields of one spec object, tracking which were read so unknown keys can be refused.

    :param data: the JSON object.
    :param path: its dotted path in the spec ("" for the top level).
    """

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise SpecError(path or "<spec>", data, "must be a JSON object")
        self.data = data
        self.path = path

    def name(self, key: str) -> str:
        """Return the dotted path of ``key``.

        :param key: a key of this object.
        """
        return f"{self.path}.{key}" if self.path else key

    def only(self, allowed: Iterable[str], what: str) -> None:
        """Refuse keys outside ``allowed``.

        :param allowed: the valid keys.
        :param what: the object's description for the message, e.g. ``merge options``.
        """
        allowed = sorted(set(allowed))
        for key in self.data:
            if key not in allowed:
                raise SpecError(
                    self.name(str(key)),
                    self.data[key],
                    f"unknown field for {what}; valid fields are {', '.join(allowed) or '(none)'}",
                )

    def has(self, key: str) -> bool:
        """Return True when ``key`` is present and not null.

        :param key: the key.
        """
        return self.data.get(key) is not None

    def string(self, key: str, *, required: bool = False, default: str | None = None) -> str | None:
        """Read a non-empty string.

        :param key: the key.
        :param required: refuse a missing or null value.
        :param default: the value when missing.
        """
        value = self.data.get(key)
        if value is None:
            if required:
                raise SpecError(self.name(key), None, "is required (a non-empty string)")
            return default
        if not isinstance(value, str) or not value.strip():
            raise SpecError(self.name(key), value, "must be a non-empty string")
        return value

    def sql(self, key: str, *, required: bool = False) -> str | None:
        """Read a SQL text (a condition, an expression, a statement, a query): a non-empty string without
        ``${``, which Spark's variable substitution would replace (``${env:SECRET}``, ``${spark:...}``).

        :param key: the key.
        :param required: refuse a missing or null value.
        """
        value = self.string(key, required=required)
        check_sql_text(self.name(key), value)
        return value

    def boolean(self, key: str, default: bool) -> bool:
        """Read a JSON boolean.

        :param key: the key.
        :param default: the value when missing.
        """
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SpecError(self.name(key), value, "must be true or false")
        return value

    def integer(self, key: str, default: int | None, *, minimum: int = 0) -> int | None:
        """Read an integer ``>= minimum``.

        :param key: the key.
        :param default: the value when missing.
        :param minimum: the smallest valid value.
        """
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(self.name(key), value, f"must be an integer >= {minimum}")
        if value < minimum:
            raise SpecError(self.name(key), value, f"must be >= {minimum}")
        return value

    def number(self, key: str, *, minimum: float = 0.0) -> float | None:
        """Read a finite number ``>= minimum``, or None.

        :param key: the key.
        :param minimum: the smallest valid value.
        """
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise SpecError(self.name(key), value, "must be a finite number")
        if value < minimum:
            raise SpecError(self.name(key), value, f"must be >= {minimum:g}")
        return float(value)

    def strings(self, key: str, *, non_empty: bool = False) -> tuple[str, ...]:
        """Read a list of non-empty strings (missing means empty).

        :param key: the key.
        :param non_empty: refuse an empty list.
        """
        value = self.data.get(key)
        if value is None:
            value = []
        if not isinstance(value, list):
            raise SpecError(self.name(key), value, 'must be a list of names, e.g. ["id"]')
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise SpecError(f"{self.name(key)}[{index}]", item, "must be a non-empty string")
        if non_empty and not value:
            raise SpecError(self.name(key), value, "must list at least one name")
        if len(set(value)) != len(value):
            raise SpecError(self.name(key), value, "lists a name twice")
        return tuple(value)

    def mapping(self, key: str, *, values: str) -> dict[str, Any]:
        """Read an object whose values are SQL expressions (``values="sql"``), scalars (``"scalar"``) or
        Spark conf values (``"conf"``, converted to strings).

        :param key: the key.
        :param values: the kind of the values.
        """
        return read_mapping(self.data.get(key), self.name(key), values=values)

    def partition_values(self, key: str) -> tuple[dict[str, Any], ...] | None:
        """Read ``[{"col": value, ...}, ...]`` (None when missing).

        :param key: the key.
        """
        raw = self.data.get(key)
        if raw is None:
            return None
        if not isinstance(raw, list) or not raw:
            raise SpecError(self.name(key), raw, 'must be a non-empty list like [{"date": "2026-11-20"}]')
        rows: list[dict[str, Any]] = []
        for index, entry in enumerate(raw):
            path = f"{self.name(key)}[{index}]"
            if not isinstance(entry, dict) or not entry:
                raise SpecError(
                    path, entry, 'must be an object naming partition columns, e.g. {"date": "..."}'
                )
            rows.append(read_mapping(entry, path, values="scalar"))
        return tuple(rows)

    def objects(self, key: str) -> list[Fields] | None:
        """Read a list of objects (None when missing).

        :param key: the key.
        """
        raw = self.data.get(key)
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise SpecError(self.name(key), raw, "must be a list of objects")
        return [Fields(item, f"{self.name(key)}[{index}]") for index, item in enumerate(raw)]


def check_sql_text(field: str, text: str | None) -> None:
    """Refuse SQL text holding ``${``: Spark substitutes ``${env:...}``, ``${spark:...}`` and friends anywhere
    in SQL it parses (string literals included), so templated input could read the driver's environment.

    :param field: the dotted path of the field.
    :param text: the SQL text, or None.
    """
    if text is not None and "${" in text:
        raise SpecError(
            field,
            text,
            "contains '${', which Spark's variable substitution would replace (e.g. ${env:NAME} with an "
            "environment variable); remove it, or compare with a value through equals/partition_values/args, "
            "which are quoted as literals",
        )


def check_one_statement(field: str, text: str) -> None:
    """Refuse SQL text that is not exactly one statement (Spark runs one statement per call, and a task's
    conflicts, lease and report describe one write), or that cannot be read as SQL.

    :param field: the dotted path of the field.
    :param text: the SQL text.
    """
    try:
        statements = split_statements(text)
    except SqlTextError as exc:
        raise SpecError(field, text, f"cannot be read as SQL: {exc}") from None
    if not statements:
        raise SpecError(
            field, text, "holds no statement, only comments or semicolons; give one SQL statement"
        )
    if len(statements) > 1:
        raise SpecError(
            field,
            text,
            f"holds {len(statements)} statements separated by ';'; give one statement per task (a "
            "DeltaSqlOperator each, in order), so that each write is retried and reported on its own",
        )


def read_mapping(raw: Any, path: str, *, values: str) -> dict[str, Any]:
    """Read an object whose values are SQL expressions (``values="sql"``), scalars (``"scalar"``) or Spark
    conf values (``"conf"``, converted to strings); None reads as ``{}``.

    :param raw: the JSON value.
    :param path: its dotted path.
    :param values: the kind of the values.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SpecError(path, raw, "must be a JSON object")
    result: dict[str, Any] = {}
    for name, value in raw.items():
        field = f"{path}.{name}"
        if not name:
            raise SpecError(field, value, "keys must be non-empty")
        if values == "sql":
            if not isinstance(value, str) or not value.strip():
                raise SpecError(field, value, 'must be a SQL expression string, e.g. "s.amount"')
            check_sql_text(field, value)
            result[name] = value
        elif values == "conf":
            if value is None or isinstance(value, dict | list):
                shown = REDACTED if is_sensitive_key(name) else value  # never echo a secret
                raise SpecError(field, shown, "must be a string, number or boolean")
            result[name] = str(value).lower() if isinstance(value, bool) else str(value)
        else:
            if not isinstance(value, Scalar):
                raise SpecError(field, value, "must be a string, number, boolean or null")
            if isinstance(value, float) and not math.isfinite(value):
                raise SpecError(field, value, "must be a finite number")
            result[name] = value
    return result
