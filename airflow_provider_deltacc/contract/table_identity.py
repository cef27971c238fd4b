"""One key per Delta table, however a task spells it.

Leases, turns, the maintenance gate and declared windows compare tables by :func:`table_key`, so a writer on
``s3a://lake/orders`` and an OPTIMIZE on ``s3://lake/orders/`` see each other. The key is for comparing, not
for reading: Spark and delta-rs are always given the table as the task spelled it.

* **Paths**: a local ``file:`` URI becomes the bare absolute path; ``s3a`` and ``s3n`` become ``s3``;
  ``abfs``, ``wasb`` and ``wasbs`` become ``abfss`` with the account's ``dfs`` host (the ``blob`` host names
  the same storage); the scheme and host are lower-cased, credentials are dropped, and ``.``/``..``
  segments, doubled and trailing slashes are resolved. The path's case is kept: object keys and
  most file systems are case-sensitive. A relative path keeps its form (only Spark knows what it is
  relative to).
* **Catalog names** are unquoted (`` `Sales`.`Orders` ``) and lower-cased (Spark resolves them without regard
  to case), and completed with ``spark_catalog`` and ``default``: ``orders`` is
  ``spark_catalog.default.orders``. If a session's current database is not ``default``, two different
  tables may share a key: they are then serialized as one, which costs waiting but never safety.
"""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit, urlunsplit

DEFAULT_CATALOG = "spark_catalog"
DEFAULT_SCHEMA = "default"
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3", "abfs": "abfss", "wasb": "abfss", "wasbs": "abfss"}
_AZURE_BLOB_HOST = ".blob.core.windows.net"
_AZURE_DFS_HOST = ".dfs.core.windows.net"


def table_key(table: str) -> str:
    """The key every task on the same table shares (see the module docstring).

    :param table: a path, a URI or a catalog name, as a task spells it.
    :raises ValueError: when ``table`` is not a non-empty string.
    """
    if not isinstance(table, str) or not table.strip():
        raise ValueError(f"table={table!r} must be a non-empty string")
    spelled = table.strip()
    if "/" in spelled or "\\" in spelled:
        return _path_key(spelled)
    return _catalog_key(spelled)


def same_table(a: str, b: str) -> bool:
    """Whether two spellings name the same table.

    :param a: a table.
    :param b: another table.
    """
    return table_key(a) == table_key(b)


def _path_key(table: str) -> str:
    parsed = urlsplit(table)
    scheme = parsed.scheme.lower()
    if not scheme or len(scheme) == 1:  # no scheme, or a Windows drive letter
        if table.startswith("/"):
            return _clean(table)
        return posixpath.normpath(table.replace("\\", "/"))
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    host = (parsed.hostname or "").lower()
    if parsed.port is not None:
        host = f"{host}:{parsed.port}"
    if scheme == "abfss" and host.endswith(_AZURE_BLOB_HOST):
        host = host[: -len(_AZURE_BLOB_HOST)] + _AZURE_DFS_HOST
    # abfss' user part is the container; anywhere else it is a credential, not part of the table.
    user = parsed.username if scheme == "abfss" else None
    netloc = f"{user}@{host}" if user else host
    if scheme == "file" and netloc in ("", "localhost"):
        return _clean(parsed.path)
    return urlunsplit((scheme, netloc, _clean(parsed.path), "", ""))


def _clean(path: str) -> str:
    if not path:
        return "/"
    cleaned = posixpath.normpath("/" + path.lstrip("/"))
    return "/" + cleaned.lstrip("/")


def _catalog_key(name: str) -> str:
    parts = _split_identifier(name)
    parts = [DEFAULT_CATALOG, DEFAULT_SCHEMA][: max(0, 3 - len(parts))] + parts
    return ".".join(_quoted(part.lower()) for part in parts)


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
