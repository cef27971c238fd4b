"""The one error type for bad input, shared by the spec parser and the engine's pre-write checks."""

from __future__ import annotations

from typing import Any

_VALUE_LIMIT = 200


def short_repr(value: Any) -> str:
    """Return ``repr(value)`` cut to a length that fits in one log line.

    :param value: any value.
    """
    text = repr(value)
    return text if len(text) <= _VALUE_LIMIT else text[: _VALUE_LIMIT - 3] + "..."


class InputError(ValueError):
    """The job's input is wrong; nothing was written and retrying the same input cannot help.

    :param field: the dotted path of the offending field, e.g. ``options.partition_pin``.
    :param value: the offending value.
    :param message: what is wrong and how to fix it.
    """

    def __init__(self, field: str, value: Any, message: str) -> None:
        super().__init__(f"{field}={short_repr(value)}: {message}")
        self.field = field
        self.value = value
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.field, self.value, self.message)
