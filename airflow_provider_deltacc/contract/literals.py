"""Quote Python values as Spark SQL literals of a column's type, and identifiers as backticked names.

Every user value that reaches a SQL text (a predicate, a ``replaceWhere``, a MERGE condition) goes through
:func:`sql_literal`; nothing is formatted into SQL any other way. Spark's parameter markers
(``spark.sql(text, args=...)``) would be the better way, but Delta's UPDATE, DELETE and MERGE leave them
unbound (``UNBOUND_SQL_PARAMETER`` on Delta 4.4, Spark 4.2; ``tests/integration/engine/test_literals_real.py``
fails once they bind), and ``replaceWhere`` and ``OPTIMIZE … WHERE`` take none.

Two parser behaviours matter beyond quote characters:

* With the default ``spark.sql.parser.escapedStringLiterals=false`` a backslash starts an escape sequence,
  so backslashes are doubled and ``'`` is doubled. With ``true`` backslashes are literal and a string holding
  ``'`` or ``\\`` cannot be written portably, so it is emitted as UTF-8 bytes: ``CAST(X'..' AS STRING)``.
* ``spark.sql.variable.substitute`` (default on) replaces ``${...}`` anywhere in the SQL text, inside
  literals too, e.g. ``${env:SECRET}``. ``${`` is therefore written as ``$\\{`` (the parser drops the
  backslash of an unknown escape) or, in escaped mode, hex-encoded; identifiers holding ``${`` are refused.

Plain Python, no pyspark: the task-group factories quote names with it at parse time. Which mode a session
parses in is read on Spark (:func:`airflow_provider_deltacc.engine.literals.escaped_string_literals`).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from airflow_provider_deltacc.contract.exceptions import LiteralError

_INTEGER_TYPES: dict[str, tuple[int, str]] = {
    "tinyint": (8, "Y"),
    "smallint": (16, "S"),
    "int": (32, ""),
    "integer": (32, ""),
    "bigint": (64, "L"),
}
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}:\d{2})?"
)
_DECIMAL_RE = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_CHAR_RE = re.compile(r"(?:var)?char\(\d+\)")


class SparkType(Protocol):
    """A column type as this module reads it: a pyspark ``DataType``, or anything with ``simpleString()``."""

    def simpleString(self) -> str: ...


def type_name(data_type: SparkType | str) -> str:
    """Return the normalised Spark SQL name of a type, e.g. ``decimal(10,2)``.

    :param data_type: a pyspark ``DataType`` or a type name.
    """
    text = data_type if isinstance(data_type, str) else data_type.simpleString()
    return re.sub(r"\s+", "", text.strip().lower())


def quote_identifier(name: str) -> str:
    """Quote one identifier (a column or a single name part) in backticks, doubling inner backticks.

    :param name: the identifier.
    :raises LiteralError: if the name is empty or contains ``${`` (which Spark would substitute).
    """
    if not isinstance(name, str) or not name:
        raise LiteralError(f"an identifier must be a non-empty string, got {name!r}")
    if "${" in name:
        raise LiteralError(
            f"identifier {name!r} contains '${{', which Spark's variable substitution rewrites"
        )
    return "`" + name.replace("`", "``") + "`"


def embedded_expression(text: str) -> str:
    """Put a user's SQL expression into a larger statement as one parenthesised operand.

    The expression must already have been analysed on its own as one expression (see
    ``operations.base.check_expressions``), so its quotes, brackets and block comments are balanced. The
    line breaks end a trailing ``--`` comment inside the parentheses, so nothing after the operand can be
    commented out and the expression cannot reach past its parentheses.

    :param text: the expression, e.g. ``t.amount > 0``.
    """
    return f"(\n{text}\n)"


def string_literal(text: str, *, escaped: bool = False) -> str:
    """Quote a Python string as a Spark SQL string literal.

    :param text: the string.
    :param escaped: the session's ``spark.sql.parser.escapedStringLiterals``.
    """
    if escaped:
        if "'" in text or "\\" in text or "${" in text:
            return f"CAST(X'{text.encode('utf-8').hex().upper()}' AS STRING)"
        return f"'{text}'"
    body = text.replace("\\", "\\\\").replace("'", "''").replace("${", "$\\{")
    return f"'{body}'"


def sql_literal(value: Any, data_type: SparkType | str, *, escaped: bool = False) -> str:
    """Return ``value`` as a Spark SQL literal of ``data_type``; ``None`` becomes ``NULL``.

    Predicates must still test ``None`` with ``IS NULL``; see :func:`equals_predicate`.

    :param value: the Python value (strings are accepted for dates, timestamps, numbers and booleans).
    :param data_type: the column's Spark type, as a ``DataType`` or its SQL name.
    :param escaped: the session's ``spark.sql.parser.escapedStringLiterals``.
    :raises LiteralError: if the value is not a valid value of the type, or the type is unsupported.
    """
    name = type_name(data_type)
    if value is None:
        return "NULL"
    if name == "string" or _CHAR_RE.fullmatch(name):
        if not isinstance(value, str):
            raise LiteralError(f"a {name} value must be a string, got {value!r}")
        return string_literal(value, escaped=escaped)
    if name == "boolean":
        return _boolean(value)
    if name in _INTEGER_TYPES:
        return _integer(value, name)
    if name in ("float", "double", "real"):
        return _floating(value, name)
    decimal_match = _DECIMAL_RE.fullmatch(name)
    if decimal_match or name == "decimal":
        precision, scale = (int(decimal_match[1]), int(decimal_match[2])) if decimal_match else (10, 0)
        return _decimal(value, precision, scale)
    if name == "date":
        return f"DATE '{_date(value)}'"
    if name in ("timestamp", "timestamp_ltz"):
        return f"TIMESTAMP '{_timestamp(value, allow_offset=True)}'"
    if name == "timestamp_ntz":
        return f"TIMESTAMP_NTZ '{_timestamp(value, allow_offset=False)}'"
    if name == "binary":
        if not isinstance(value, bytes | bytearray):
            raise LiteralError(f"a binary value must be bytes, got {value!r}")
        return f"X'{bytes(value).hex().upper()}'"
    raise LiteralError(f"values of type {name} cannot be written as SQL literals here")


def equals_predicate(
    column_sql: str, value: Any, data_type: SparkType | str, *, escaped: bool = False
) -> str:
    """Return ``column = literal``, or ``column IS NULL`` when ``value`` is None.

    :param column_sql: the already-quoted column reference, e.g. ```t`.`date```.
    :param value: the value to compare with.
    :param data_type: the column's Spark type.
    :param escaped: the session's ``spark.sql.parser.escapedStringLiterals``.
    """
    if value is None:
        return f"{column_sql} IS NULL"
    return f"{column_sql} = {sql_literal(value, data_type, escaped=escaped)}"


def in_predicate(
    column_sql: str, values: list[Any], data_type: SparkType | str, *, escaped: bool = False
) -> str:
    """Return ``(column IN (...) OR column IS NULL)`` for a non-empty list of values.

    :param column_sql: the already-quoted column reference.
    :param values: the values; ``None`` among them adds ``IS NULL``.
    :param data_type: the column's Spark type.
    :param escaped: the session's ``spark.sql.parser.escapedStringLiterals``.
    :raises LiteralError: if ``values`` is empty (an empty IN list is not valid SQL).
    """
    if not values:
        raise LiteralError("an IN predicate needs at least one value")
    literals: list[str] = []
    for value in values:
        if value is not None:
            literal = sql_literal(value, data_type, escaped=escaped)
            if literal not in literals:
                literals.append(literal)
    parts = [f"{column_sql} IN ({', '.join(literals)})"] if literals else []
    if any(v is None for v in values):
        parts.append(f"{column_sql} IS NULL")
    return "(" + " OR ".join(parts) + ")"


def _boolean(value: Any) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().upper()
    raise LiteralError(f"a boolean value must be true or false, got {value!r}")


def _integer(value: Any, name: str) -> str:
    bits, suffix = _INTEGER_TYPES[name]
    if isinstance(value, bool):
        raise LiteralError(f"a {name} value must be an integer, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
        number = int(value.strip())
    elif isinstance(value, float | Decimal) and value == int(value):
        number = int(value)
    else:
        raise LiteralError(f"a {name} value must be an integer, got {value!r}")
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if not low <= number <= high:
        raise LiteralError(f"{number} is out of range for {name} [{low}, {high}]")
    return f"{number}{suffix}"


def _floating(value: Any, name: str) -> str:
    if isinstance(value, bool):
        raise LiteralError(f"a {name} value must be a number, got {value!r}")
    try:
        number = float(value) if isinstance(value, int | float | Decimal | str) else None
    except ValueError:
        number = None
    if number is None:
        raise LiteralError(f"a {name} value must be a number, got {value!r}")
    text = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if math.isfinite(number):
        text = repr(number)
    return f"CAST('{text}' AS {'FLOAT' if name == 'float' else 'DOUBLE'})"


def _decimal(value: Any, precision: int, scale: int) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise LiteralError(f"a decimal value must be a number, got {value!r}")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise LiteralError(f"a decimal value must be a number, got {value!r}") from None
    if not number.is_finite():
        raise LiteralError(f"a decimal value must be finite, got {value!r}")
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    fraction_digits = max(0, -exponent)
    if fraction_digits > scale and number != number.quantize(Decimal(1).scaleb(-scale)):
        raise LiteralError(
            f"{value!r} has more than {scale} fractional digits for decimal({precision},{scale})"
        )
    integer_digits = len(str(abs(int(number)))) if int(number) != 0 else 0
    if integer_digits > precision - scale:
        raise LiteralError(f"{value!r} does not fit decimal({precision},{scale})")
    return f"CAST('{number:f}' AS DECIMAL({precision},{scale}))"


def _date(value: Any) -> str:
    if isinstance(value, datetime):
        raise LiteralError(f"a date value must be a date, not a timestamp: {value!r}")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str) and _DATE_RE.fullmatch(value.strip()):
        try:
            return date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise LiteralError(f"a date value must be 'YYYY-MM-DD', got {value!r}")


def _timestamp(value: Any, *, allow_offset: bool) -> str:
    parsed: datetime | None = None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and _TIMESTAMP_RE.fullmatch(value.strip()):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            parsed = None
    if parsed is None:
        raise LiteralError(
            f"a timestamp value must be ISO 8601 ('YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM]'), got {value!r}"
        )
    if parsed.tzinfo is not None and not allow_offset:
        raise LiteralError(f"a timestamp_ntz value must not carry a time zone, got {value!r}")
    return parsed.isoformat(sep=" ")
