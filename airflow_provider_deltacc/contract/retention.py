"""VACUUM retention as a table states it: ``delta.deletedFileRetentionDuration`` read into hours.

Plain Python: the gate and the lease code read it from the Delta log without Spark, and the VACUUM on the
Spark driver reads it from the table's snapshot.
"""

from __future__ import annotations

import re

RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
DEFAULT_RETENTION_HOURS = 168.0

_UNIT_HOURS: dict[str, float] = {
    "week": 168.0,
    "day": 24.0,
    "hour": 1.0,
    "minute": 1 / 60,
    "second": 1 / 3600,
    "millisecond": 1 / 3_600_000,
    "microsecond": 1 / 3_600_000_000,
}
_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+?)s?\b")


def parse_interval_hours(text: str) -> float:
    """Parse a Delta interval property such as ``interval 1 week`` or ``7 days`` into hours.

    :param text: the property value.
    :raises ValueError: if the text is not a sum of ``<number> <unit>`` pairs.
    """
    body = text.strip().lower()
    body = body.removeprefix("interval").strip()
    total, position = 0.0, 0
    for match in _PAIR.finditer(body):
        if body[position : match.start()].strip():
            break
        unit = match[2]
        if unit not in _UNIT_HOURS:
            raise ValueError(f"unknown interval unit {unit!r} in {text!r}")
        total += float(match[1]) * _UNIT_HOURS[unit]
        position = match.end()
    if position == 0 or body[position:].strip():
        raise ValueError(f"cannot read the interval {text!r}")
    return total


def table_retention_hours(properties: dict[str, str]) -> float:
    """Return the table's ``delta.deletedFileRetentionDuration`` in hours (168 when unset).

    :param properties: the table properties.
    :raises ValueError: if the property is set but unreadable.
    """
    text = properties.get(RETENTION_PROPERTY)
    return DEFAULT_RETENTION_HOURS if text is None else parse_interval_hours(text)
