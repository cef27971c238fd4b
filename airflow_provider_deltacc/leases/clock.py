"""The one clock lease stores, windows and the gate read, injectable for tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: Returns the current time, timezone-aware.
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time in UTC, timezone-aware."""
    return datetime.now(UTC)


def require_aware(value: datetime, *, field: str) -> datetime:
    """Return ``value`` in UTC, refusing a naive datetime (its meaning would depend on the machine).

    :param value: a timezone-aware datetime.
    :param field: the parameter name quoted in the error message.
    :raises ValueError: if ``value`` is naive.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{field}={value.isoformat()} has no timezone; pass an aware datetime, "
            "e.g. datetime.now(timezone.utc)"
        )
    return value.astimezone(UTC)


def format_hhmm(value: datetime, now: datetime) -> str:
    """``10:02`` (UTC) for a time on the same UTC day as ``now``, else ``2026-11-19 10:02``.

    :param value: the time to show.
    :param now: the reference time.
    """
    value, now = value.astimezone(UTC), now.astimezone(UTC)
    return value.strftime("%H:%M" if value.date() == now.date() else "%Y-%m-%d %H:%M")
