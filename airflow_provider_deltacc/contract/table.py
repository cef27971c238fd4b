"""Name a target table without Spark: a path or a catalog name, checked, and its SQL reference.

A table string containing ``/`` is a path (``/data/orders``, ``s3a://bucket/orders``); anything else must be a
catalog name of one to three plain parts (``orders``, ``sales.orders``, ``cat.sales.orders``). Plain Python:
the operators and task groups check names at parse time; the Spark job reads the table
(:mod:`airflow_provider_deltacc.engine.table`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.literals import quote_identifier

CATALOG_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}")


def is_path(table: str) -> bool:
    """Return True when ``table`` names a path rather than a catalog table.

    :param table: the table as given in the spec.
    """
    return "/" in table or "\\" in table


def local_path(location: str) -> Path | None:
    """The path on this machine's file system a table location names: an absolute path or a ``file:`` URI;
    None for anything else (object storage, HDFS, a relative path).

    Whoever reads it must allow for this machine not being the one Spark writes from (a remote Spark Connect
    server): the file may be missing, or another one.

    :param location: the table's path or URI.
    """
    if location.startswith("/"):
        return Path(location)
    parsed = urlparse(location)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(parsed.path)
    return None


def check_table_name(table: Any, field_name: str = "table") -> str:
    """Validate a table string without touching Spark and return it.

    :param table: the value from the spec.
    :param field_name: the spec field, for the error.
    :raises InputError: if it is neither a path nor a plain catalog name.
    """
    if not isinstance(table, str) or not table.strip():
        raise InputError(field_name, table, "must be a non-empty string: a table path or a catalog name")
    if "${" in table:
        raise InputError(field_name, table, "must not contain '${' (Spark would substitute it)")
    if not is_path(table) and not CATALOG_NAME_RE.fullmatch(table):
        raise InputError(
            field_name,
            table,
            "is neither a path (it has no '/') nor a catalog name like 'db.table' of letters, digits and _",
        )
    return table


def table_sql(table: str) -> str:
    """Return a SQL reference to the table: ``delta.`<path>``` or a backticked catalog name.

    :param table: a path or a catalog name (see :func:`check_table_name`).
    """
    if is_path(table):
        return f"delta.{quote_identifier(table)}"
    return ".".join(quote_identifier(part) for part in table.split("."))
