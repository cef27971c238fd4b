"""Where a table is, in the Airflow worker's terms: the storage it names, whether only the Spark job can
resolve it, one key per table however a task spells it, and its asset URI, the last two from one normalized
location (the Spark driver needs none of them, so they stay out of its bundle).

Leases, turns, the maintenance gate, declared windows, metrics and the UI compare tables by
:func:`table_key`, so a writer on ``s3a://lake/orders`` and an OPTIMIZE on ``s3://lake/orders/`` see each
other. Spark and delta-rs are always given the table as the task spelled it.

* **Paths**: a local ``file:`` URI becomes the bare absolute path; ``s3a`` and ``s3n`` become ``s3``;
  ``abfs``, ``wasb`` and ``wasbs`` become ``abfss`` with the account's ``dfs`` host (the ``blob`` host names
  the same storage); the scheme and host are lower-cased, credentials are dropped, and ``.``/``..``
  segments, doubled and trailing slashes are resolved. The path's case is kept: object keys and most file
  systems are case-sensitive. A relative path keeps its form (only Spark knows what it is relative to).
* **Catalog names** are unquoted (`` `Sales`.`Orders` ``) and lower-cased (Spark resolves them without regard
  to case), and completed with ``spark_catalog`` and ``default``: ``orders`` is
  ``spark_catalog.default.orders``. If a session's current database is not ``default``, two different tables
  may share a key: they are then serialized as one, which costs waiting but never safety.
* **Asset URIs** (:func:`asset_uri`): the key's location, a local path as a ``file://`` URI; a catalog table
  as ``x-deltacc-table://<catalog>/<schema>/<table>``.
"""

from __future__ import annotations

import functools
import posixpath
from enum import StrEnum
from urllib.parse import SplitResult, urlsplit, urlunsplit

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.table import CATALOG_NAME_RE, Table

#: Schemes that name the same storage (``s3a://b/t`` and ``s3://b/t`` are one table).
SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "abfs": "abfss", "wasb": "abfss", "wasbs": "abfss"}
DEFAULT_CATALOG = "spark_catalog"
DEFAULT_SCHEMA = "default"
CATALOG_ASSET_SCHEME = "x-deltacc-table"
_AZURE_BLOB_HOST = ".blob.core.windows.net"
_AZURE_DFS_HOST = ".dfs.core.windows.net"


class Storage(StrEnum):
    """Where a table lives, as its name says."""

    LOCAL = "local"
    S3 = "s3"
    ABFS = "abfs"
    GCS = "gcs"
    HDFS = "hdfs"
    CATALOG = "catalog"
    OTHER = "other"


_STORAGE_OF_SCHEME = {
    "": Storage.LOCAL,
    "file": Storage.LOCAL,
    "s3": Storage.S3,
    "abfss": Storage.ABFS,
    "az": Storage.ABFS,
    "gs": Storage.GCS,
    "hdfs": Storage.HDFS,
}


def storage(table: Table) -> Storage:
    """A catalog, local disk, or the object store or file system the table's scheme names.

    :param table: the table.
    """
    return _STORAGE_OF_SCHEME.get(_scheme(table), Storage.OTHER) if table.is_path else Storage.CATALOG


def is_relative(table: Table) -> bool:
    """A path with no scheme off the root: only the Spark job knows what it is relative to.

    :param table: the table.
    """
    return table.is_path and not _scheme(table) and not table.name.strip().startswith("/")


@functools.lru_cache(maxsize=4096)
def table_key(table: Table) -> str:
    """The key every task on the same table shares (see the module docstring). Remembered per spelling: the
    conflicts page keys every report it reads.

    :param table: the table, as a task spelled it.
    """
    if not table.is_path:
        return ".".join(_quoted(part.lower()) for part in _catalog_parts(table))
    scheme = _scheme(table)
    if not scheme:
        spelled = table.name.strip()
        return _clean(spelled) if spelled.startswith("/") else posixpath.normpath(spelled.replace("\\", "/"))
    netloc = _netloc(table)
    if scheme == "file" and netloc in ("", "localhost"):
        return _clean(_parts(table).path)
    return urlunsplit((scheme, netloc, _clean(_parts(table).path), "", ""))


def same_table(a: Table, b: Table) -> bool:
    """Whether two spellings name the same table.

    :param a: a table.
    :param b: another table.
    """
    return table_key(a) == table_key(b)


def asset_uri(table: Table) -> str:
    """The table's Airflow asset URI (see the module docstring).

    :param table: the table.
    :raises InputError: naming ``table`` when no stable URI can be derived: a relative or Windows path, or a
        catalog name that is not plain parts.
    """
    if not table.is_path:
        if not CATALOG_NAME_RE.fullmatch(table.name.strip()):
            raise InputError("table", table.name, "is neither a path nor a catalog name like 'db.table'")
        catalog, schema, name = _catalog_parts(table)
        return f"{CATALOG_ASSET_SCHEME}://{catalog}/{schema}/{name}".lower()
    if _parts(table).scheme and not table.uri_scheme:  # a drive letter
        raise InputError("table", table.name, "is a Windows path")
    if is_relative(table):
        raise InputError(
            "table", table.name, "is a relative path: its asset URI would depend on the working directory"
        )
    key = table_key(table)
    return urlunsplit(("file", "", key, "", "")) if key.startswith("/") else key


def _parts(table: Table) -> SplitResult:
    return urlsplit(table.name.strip())


def _scheme(table: Table) -> str:
    """The scheme every spelling of the table's storage shares (``s3a`` -> ``s3``); empty for none."""
    scheme = table.uri_scheme
    return SCHEME_ALIASES.get(scheme, scheme)


def _netloc(table: Table) -> str:
    parsed = _parts(table)
    host = (parsed.hostname or "").lower()
    if parsed.port is not None:
        host = f"{host}:{parsed.port}"
    abfss = _scheme(table) == "abfss"
    if abfss and host.endswith(_AZURE_BLOB_HOST):
        host = host[: -len(_AZURE_BLOB_HOST)] + _AZURE_DFS_HOST
    # abfss' user part is the container; anywhere else it is a credential, not part of the table.
    user = parsed.username if abfss else None
    return f"{user}@{host}" if user else host


def _catalog_parts(table: Table) -> list[str]:
    parts = _split_identifier(table.name.strip())
    return [DEFAULT_CATALOG, DEFAULT_SCHEMA][: max(0, 3 - len(parts))] + parts


def _clean(path: str) -> str:
    if not path:
        return "/"
    cleaned = posixpath.normpath("/" + path.lstrip("/"))
    return "/" + cleaned.lstrip("/")


def _quoted(part: str) -> str:
    """A part as it must be written to stay one part: in backticks when it holds a dot or a backtick."""
    return "`" + part.replace("`", "``") + "`" if "." in part or "`" in part else part


def _split_identifier(name: str) -> list[str]:
    """The parts of a dotted name; a part in backticks may hold dots, and a doubled backtick is one."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(name):
        char = name[i]
        if char == "`":
            if quoted and name[i + 1 : i + 2] == "`":
                current.append("`")
                i += 2
                continue
            quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current).strip())
    return parts
