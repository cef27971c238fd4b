"""A target table as the job spec carries it: a path (a name holding ``/``) or a catalog name. Its storage,
key and asset URI: :mod:`.table_location` (the worker's)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.literals import quote_identifier

CATALOG_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}")


@dataclass(frozen=True)
class Table:
    """A table as a task names it (any non-empty name; :meth:`of` checks a task's argument).

    :param name: the path or catalog name, as the task spelled it.
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"table={self.name!r} must be a non-empty string")

    @classmethod
    def of(cls, value: Any, field_name: str = "table") -> Table:
        """A task's table argument (or a :class:`Table`), checked; an InputError names ``field_name``."""
        if isinstance(value, Table):
            return value
        if not isinstance(value, str) or not value.strip():
            raise InputError(field_name, value, "must be a non-empty string: a table path or a catalog name")
        if "${" in value:
            raise InputError(field_name, value, "must not contain '${' (Spark would substitute it)")
        table = cls(value)
        if not table.is_path and not CATALOG_NAME_RE.fullmatch(value):
            raise InputError(
                field_name,
                value,
                "is neither a path (it has no '/') nor a catalog name like 'db.table' of letters, digits "
                "and _",
            )
        return table

    def __str__(self) -> str:
        return self.name

    @property
    def is_path(self) -> bool:
        """A path or URI, not a catalog name."""
        return "/" in self.name or "\\" in self.name

    @property
    def uri_scheme(self) -> str:
        """The URI scheme as spelled, lower-cased; empty without one (a Windows drive, ``C:``, is none)."""
        scheme = urlsplit(self.name.strip()).scheme.lower() if self.is_path else ""
        return scheme if len(scheme) > 1 else ""

    @property
    def scheme(self) -> str:
        """:attr:`uri_scheme`, ``file`` without one, ``catalog`` for a catalog name."""
        return (self.uri_scheme or "file") if self.is_path else "catalog"

    @property
    def local_path(self) -> Path | None:
        """See :func:`local_path`."""
        return local_path(self.name)

    @property
    def sql(self) -> str:
        """A SQL reference: ``delta.`<path>``` or the backticked catalog name."""
        if self.is_path:
            return f"delta.{quote_identifier(self.name)}"
        return ".".join(quote_identifier(part) for part in self.name.split("."))


def local_path(location: str) -> Path | None:
    """The path on this machine an absolute path or a ``file:`` URI names, else None (it may not be the
    machine Spark writes from: a remote Connect server)."""
    if location.startswith("/"):
        return Path(location)
    parsed = urlsplit(location)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(parsed.path)
    return None
