"""Read an operator's arguments without running it: plain and mapped operators, templates, XCom.

A value that is only known at run time (a Jinja template, an upstream task's XCom, an argument a mapped
task expands over) comes back as :class:`RunTime`, saying why, so the advisor can assume the worst.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class RunTime:
    """A value decided at run time.

    :param why: e.g. ``partition_values is templated``.
    """

    why: str


def is_mapped(task: Any) -> bool:
    """Whether ``task`` is a mapped operator (``.partial().expand()``)."""
    return bool(getattr(task, "is_mapped", False))


def operator_class(task: Any) -> type:
    """The operator class of a plain or mapped task."""
    cls = getattr(task, "operator_class", None) if is_mapped(task) else None
    return cls if isinstance(cls, type) else type(task)


@cache
def _signature_default(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            parameter = inspect.signature(init).parameters.get(name)
        except (TypeError, ValueError):
            continue
        if parameter is not None and parameter.default is not inspect.Parameter.empty:
            return parameter.default
    return None


def _runtime_reason(name: str, value: Any) -> str | None:
    """Why ``value`` is decided at run time, or None if it is a plain value."""
    if isinstance(value, str):
        return f"{name} is templated ({value.strip()[:40]!r})" if "{{" in value or "{%" in value else None
    kind = type(value).__name__
    if "XComArg" in kind:
        operator = getattr(value, "operator", None)
        upstream = getattr(operator, "task_id", None)
        return f"{name} comes from the XCom of {upstream}" if upstream else f"{name} comes from an XCom"
    if isinstance(value, Mapping):
        for item in value.values():
            reason = _runtime_reason(name, item)
            if reason:
                return reason
    elif isinstance(value, list | tuple):
        for item in value:
            reason = _runtime_reason(name, item)
            if reason:
                return reason
    return None


def argument(task: Any, name: str) -> Any:
    """The value ``task`` has for the constructor argument ``name``, or :class:`RunTime`.

    Mapped tasks: an argument it expands over is :class:`RunTime`; the others come from its partial
    arguments, the DAG's ``default_args``, then the operator's signature default.

    :param task: a plain or mapped operator.
    :param name: the argument (also the attribute the operator keeps it in).
    """
    if is_mapped(task):
        expanded = getattr(getattr(task, "expand_input", None), "value", None)
        partial = getattr(task, "partial_kwargs", {}) or {}
        if isinstance(expanded, Mapping) and name in expanded:
            return RunTime(f"{name} is mapped over (one value per mapped instance)")
        if name in partial:
            value = partial[name]
        elif not isinstance(expanded, Mapping):
            return RunTime(f"{name} may be set by expand_kwargs")
        else:
            defaults = getattr(getattr(task, "dag", None), "default_args", None) or {}
            value = defaults[name] if name in defaults else _signature_default(operator_class(task), name)
    else:
        value = getattr(task, name, None)
    reason = _runtime_reason(name, value)
    return RunTime(reason) if reason else value
