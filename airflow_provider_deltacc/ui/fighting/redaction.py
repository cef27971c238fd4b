"""No secret reaches the page: error messages with the storage options', the lease store's and the table
URI's secrets hidden.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.redaction import redact_text

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def redacted(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """``Type: message`` of an error, with every known secret and sensitive ``key=value`` hidden (and
    the terminal colours delta-rs puts in its messages dropped).

    :param exc: the error.
    :param secrets: secret values that may appear in it.
    """
    text = _ANSI_RE.sub("", f"{type(exc).__name__}: {exc}")
    return redact_text(text, [s for s in secrets if s])


def url_secrets(location: str) -> list[str]:
    """Credentials spelled into a table's URI (an abfss URI's user part is its container, not a secret)."""
    try:
        parts = urlsplit(location)
        user = parts.username if parts.scheme.lower() not in ("abfs", "abfss", "wasb", "wasbs") else None
        return [s for s in (parts.password, user) if s]
    except ValueError:
        return []
