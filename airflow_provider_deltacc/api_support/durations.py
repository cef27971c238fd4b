"""Duration arguments (seconds or a timedelta), checked with an error that names the argument."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow_provider_deltacc.exceptions import DeltaCCInputError


def seconds_argument(value: float | timedelta, name: str) -> float:
    """A non-negative number of seconds from seconds or a timedelta.

    :param value: the argument's value.
    :param name: the argument's name, for the error.
    :raises DeltaCCInputError: negative, NaN or not a number.
    """
    try:
        seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not seconds >= 0:  # negative, NaN or not a number
        raise DeltaCCInputError(
            f"{name}={value!r} must be a non-negative number of seconds or a timedelta",
            field=name,
            value=value,
        )
    return seconds


def optional_seconds(value: Any, name: str) -> float | None:
    """Like :func:`seconds_argument`, with None (or an empty rendered template) for no limit."""
    if value is None or value == "":
        return None
    return seconds_argument(value, name)
