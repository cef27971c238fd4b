"""Turn an operator's ``source`` argument into the job spec's source dict."""

from __future__ import annotations

import re
from typing import Any

from airflow_provider_deltacc.exceptions import DeltaCCInputError

_SQL_START = re.compile(r"^\s*(select|with|values|table)\b", re.IGNORECASE)
_FILE_KINDS = {".parquet": "parquet", ".csv": "csv"}


def source_spec(source: str | dict[str, Any] | None, *, field: str = "source") -> dict[str, Any] | None:
    """Accept the full dict form, or a string shorthand.

    A string is a SQL query when it starts with SELECT/WITH/VALUES/TABLE, a parquet or CSV path when it
    ends with ``.parquet``/``.csv``, a Delta table path when it contains ``/``, and otherwise a catalog
    table name. The dict form (``{"kind": "csv", "path": ..., "options": {...}}``) says it explicitly.

    :param source: the operator's ``source`` argument, after templating.
    :param field: the argument name for error messages.
    """
    if source is None or isinstance(source, dict):
        return source
    if not isinstance(source, str) or not source.strip():
        raise DeltaCCInputError(
            f"{field}={source!r} is not a source; give a table name or path, a parquet/CSV path, a SQL "
            'query, or a dict such as {"kind": "delta", "path": "/data/raw"}',
            field=field,
            value=source,
        )
    text = source.strip()
    if _SQL_START.match(text):
        return {"kind": "sql", "query": text}
    for suffix, kind in _FILE_KINDS.items():
        if text.lower().rstrip("/").endswith(suffix):
            return {"kind": kind, "path": text}
    if "/" in text:
        return {"kind": "delta", "path": text}
    return {"kind": "table", "name": text}
