"""Read a DDL column list (``"id BIGINT, amount DECIMAL(10,2), `a b` STRING"``) without Spark.

Spark's own parser (``StructType.fromDDL``) needs pyspark; these helpers serve the code that must not import
it: the task-group factories at parse time, the lease scopes, and the Delta-log fast path.
"""

from __future__ import annotations

import re

# Spark SQL type names -> the primitive type names the Delta log's schema uses.
_DELTA_PRIMITIVES: dict[str, str] = {
    "tinyint": "byte",
    "byte": "byte",
    "smallint": "short",
    "short": "short",
    "int": "integer",
    "integer": "integer",
    "bigint": "long",
    "long": "long",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "boolean": "boolean",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
}
_DECIMALS = ("decimal", "dec", "numeric")
_SIMPLE_TYPE_RE = re.compile(
    r"(?P<name>[a-z_]+)\s*(?:\(\s*(?P<precision>\d+)\s*(?:,\s*(?P<scale>\d+)\s*)?\))?"
    r"(?P<not_null>\s+not\s+null)?",
    re.IGNORECASE,
)


def split_ddl_columns(schema: str) -> list[tuple[str, str]]:
    """Split a DDL column list into ``(name, definition)`` pairs, in order.

    Commas inside ``()``/``<>`` and backticked names (with doubled backticks inside) are handled; the
    definition is the rest of the column's text (``DECIMAL(10,2) NOT NULL``), stripped.

    :param schema: the DDL text.
    :raises ValueError: saying what is wrong (unbalanced brackets, an empty column, no type).
    """
    parts: list[str] = []
    depth, quoted = 0, False
    current: list[str] = []
    for char in schema:
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "(<":
            depth += 1
        elif not quoted and char in ")>":
            depth -= 1
        if char == "," and depth == 0 and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    if quoted or depth != 0:
        raise ValueError("has unbalanced backticks, parentheses or angle brackets")
    columns: list[tuple[str, str]] = []
    for part in parts:
        text = part.strip()
        if not text:
            raise ValueError("has an empty column definition (a stray comma?)")
        if text.startswith("`"):
            end = text.find("`", 1)
            while end != -1 and text[end + 1 : end + 2] == "`":  # a doubled backtick inside the name
                end = text.find("`", end + 2)
            name, rest = text[1:end].replace("``", "`"), text[end + 1 :]
        else:
            name, _, rest = text.replace(":", " ", 1).partition(" ")
        if not name or not rest.strip():
            raise ValueError(f"{text!r} is not 'name TYPE'")
        columns.append((name, rest.strip()))
    return columns


def ddl_column_names(schema: str) -> list[str]:
    """The column names of a DDL schema such as ``id INT, date DATE, tags MAP<STRING, INT>``, in order; none
    when it does not parse (callers that only look, such as leases and the advisor, leave reporting a bad
    schema to the job).

    :param schema: the DDL text.
    """
    try:
        return [name for name, _ in split_ddl_columns(schema)]
    except ValueError:
        return []


def delta_primitive_type(definition: str) -> tuple[str, bool] | None:
    """The Delta log's name of a simple column type, and whether the column is nullable.

    ``"BIGINT"`` gives ``("long", True)``, ``"DECIMAL(10, 2) NOT NULL"`` gives ``("decimal(10,2)", False)``.
    Anything else (complex types, ``CHAR``/``VARCHAR``, intervals, comments, defaults) gives None: the caller
    cannot compare it without Spark.

    :param definition: a column definition from :func:`split_ddl_columns`.
    """
    match = _SIMPLE_TYPE_RE.fullmatch(definition.strip())
    if match is None:
        return None
    name = match["name"].lower()
    nullable = match["not_null"] is None
    if name in _DECIMALS:
        precision = int(match["precision"] or 10)
        scale = int(match["scale"] or 0)
        return f"decimal({precision},{scale})", nullable
    if match["precision"] is not None or name not in _DELTA_PRIMITIVES:
        return None
    return _DELTA_PRIMITIVES[name], nullable
