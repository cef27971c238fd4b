"""Keep secrets out of logs, errors and reports: which settings are sensitive, and how to hide them.

A setting is sensitive when its key names a secret (``secret``, ``password``, ``token``, ``credential``,
``access.key``, ``account.key``, ``private.key``, ``keytab``, ``sas``, or a key ending in ``.key``): the
pattern is a superset of Spark's own ``spark.redaction.regex`` default
(``secret|password|token|access[.]?key``).
Pure Python, shared by the hook (the spark-submit command line and output) and the Spark job (spec errors).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"
SENSITIVE_KEY_RE = re.compile(
    r"secret|passw(?:or)?d|token|credential|keytab|\bsas\b|(?:access|account|private|api)[._-]?key"
    r"|(?:^|[._-])key$",
    re.IGNORECASE,
)
#: ``key=value`` pairs in a command line or a log line.
_PAIR_RE = re.compile(r"(?P<key>[\w.\-]+)=(?P<value>\"[^\"]*\"|'[^']*'|\S+)")
#: Values shorter than this are not searched for in free text (they would redact ordinary words).
MIN_SECRET_LENGTH = 4
#: Values of sensitive-looking keys that are flags, not secrets (``spark.security.credentials.x.enabled``).
_NOT_SECRETS = frozenset({"true", "false", "none", "null"})


def is_sensitive_key(key: Any) -> bool:
    """True when a setting's key names a secret, e.g. ``spark.hadoop.fs.s3a.secret.key``.

    :param key: the setting's key.
    """
    return bool(SENSITIVE_KEY_RE.search(str(key)))


def sensitive_values(conf: Mapping[str, Any] | None) -> list[str]:
    """The values of the sensitive settings (non-empty strings), to mask wherever they might appear.

    :param conf: Spark settings or storage options.
    """
    values = []
    for key, value in (conf or {}).items():
        text = "" if value is None else str(value)
        if is_sensitive_key(key) and len(text) >= MIN_SECRET_LENGTH and text.lower() not in _NOT_SECRETS:
            values.append(text)
    return values


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Hide secrets in free text: the value of every sensitive ``key=value`` pair, and every known secret.

    :param text: a log line, a command line or an error message.
    :param secrets: secret values known to the caller (connection passwords, sensitive settings).
    """

    def pair(match: re.Match[str]) -> str:
        if is_sensitive_key(match["key"]):
            return f"{match['key']}={REDACTED}"
        return match[0]

    result = _PAIR_RE.sub(pair, text)
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        result = result.replace(secret, REDACTED)
    return result


def hide_jvm_protocol_log(conf: Mapping[str, Any] | None) -> None:
    """Keep py4j's DEBUG protocol dump (every command sent to the JVM, values included) out of the logs
    before sensitive settings are sent to Spark: its logger is raised to INFO when it would log DEBUG.

    :param conf: the settings about to be sent; nothing changes when none is sensitive.
    """
    if not sensitive_values(conf):
        return
    logger = logging.getLogger("py4j")
    if logger.getEffectiveLevel() < logging.INFO:
        logger.setLevel(logging.INFO)
