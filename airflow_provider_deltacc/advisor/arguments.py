"""Read an operator's arguments without running it: plain and mapped operators, templates, XCom.

A value that is only known at run time (a Jinja template, an upstream task's XCom, an argument a mapped
task expands over) comes back as :class:`RunTime`, saying why, so the advisor can assume the worst.

The tasks may be a DAG file's objects or those of a serialized DAG (what the api-server reads from the
metadata DB): there the operator class is looked up by name, template fields are as Airflow stored them (an
XCom as its ``xcom_pull`` template, a long value truncated), and the other arguments the advisor reads are
in the operator's ``advisor_json`` field (see ``DeltaBaseOperator.advisor_arguments``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
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


#: The provider's package: its operator classes are imported by name for a serialized DAG's tasks.
_PACKAGE = __name__.split(".", 1)[0]
#: How Airflow stores a task SDK ``XComArg`` given to a template field (its text): a task's XCom, or one
#: derived with ``.map()``/``.zip()``.
_XCOM_TEMPLATE = re.compile(r"^\{\{ task_instance\.xcom_pull\(task_ids='([^']*)'")
_DERIVED_XCOM = re.compile(r"^XComArg\(<Task\(")
#: How a template field longer than ``[core] max_templated_field_length`` starts in a serialized DAG
#: (Airflow's ``TRUNCATE_PREFIX``).
TRUNCATED = "Truncated. You can change this behaviour in [core]max_templated_field_length. "


def is_mapped(task: Any) -> bool:
    """Whether ``task`` is a mapped operator (``.partial().expand()``)."""
    return bool(getattr(task, "is_mapped", False))


@cache
def _serialized_types() -> tuple[type, ...]:
    from airflow.serialization.definitions.baseoperator import SerializedBaseOperator
    from airflow.serialization.definitions.mappedoperator import SerializedMappedOperator

    return SerializedBaseOperator, SerializedMappedOperator


def is_serialized(task: Any) -> bool:
    """Whether ``task`` comes from a serialized DAG rather than from a DAG file."""
    return isinstance(task, _serialized_types())


def _named_class(module: str, name: str) -> type | None:
    """The class ``module.name`` when its module is the provider's own or already imported; None otherwise:
    another module may be a DAG file or sit next to one, and the api-server imports no DAG code."""
    loaded = sys.modules.get(module)
    if loaded is None and (module == _PACKAGE or module.startswith(f"{_PACKAGE}.")):
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            return None
    cls = getattr(loaded, name, None) if loaded is not None else None
    return cls if isinstance(cls, type) else None


def _advisor_json(task: Any) -> dict[str, Any] | None:
    """The ``advisor_json`` field of a serialized provider task (None: the task has none)."""
    from airflow_provider_deltacc.operators.base import ADVISOR_JSON

    text = getattr(task, ADVISOR_JSON, None)
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _serialized_class(task: Any) -> type | None:
    """A serialized task's operator class: the one it names, else the provider class its ``advisor_json``
    names (a subclass defined in a DAG file or a module the api-server does not import)."""
    cls = _named_class(str(getattr(task, "_task_module", "")), str(getattr(task, "task_type", "")))
    if cls is None:
        module, _, name = str((_advisor_json(task) or {}).get("class", "")).rpartition(".")
        cls = _named_class(module, name) if module.startswith(f"{_PACKAGE}.") else None
    return cls


def operator_class(task: Any) -> type:
    """The operator class of a plain or mapped task (a serialized task's class when it can be found, else the
    type of the serialized task itself, which is no provider operator)."""
    if is_serialized(task):
        return _serialized_class(task) or type(task)
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


def _xcom_reason(name: str, upstream: Any) -> str:
    return f"{name} comes from the XCom of {upstream}" if upstream else f"{name} comes from an XCom"


def _runtime_reason(name: str, value: Any) -> str | None:
    """Why ``value`` is decided at run time, or None if it is a plain value."""
    if isinstance(value, str):
        if value.startswith(TRUNCATED):
            return f"{name} is too long for the serialized DAG ([core] max_templated_field_length)"
        if xcom := _XCOM_TEMPLATE.match(value):
            return _xcom_reason(name, xcom.group(1))
        if _DERIVED_XCOM.match(value):
            return _xcom_reason(name, None)
        return f"{name} is templated ({value.strip()[:40]!r})" if "{{" in value or "{%" in value else None
    kind = type(value).__name__
    if "XComArg" in kind:
        return _xcom_reason(name, getattr(getattr(value, "operator", None), "task_id", None))
    if kind == "_XComRef":  # an XComArg in a serialized mapped task's partial arguments
        data = getattr(value, "data", None)
        return _xcom_reason(name, data.get("task_id") if isinstance(data, Mapping) else None)
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

    :param task: a plain or mapped operator, of a DAG file or a serialized DAG.
    :param name: the argument (also the attribute the operator keeps it in).
    """
    if is_mapped(task):
        expanded = _expanded(task)
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
    elif is_serialized(task):
        value = _serialized_argument(task, name)
    else:
        value = getattr(task, name, None)
    reason = _runtime_reason(name, value)
    return RunTime(reason) if reason else value


def _expanded(task: Any) -> Any:
    """What a mapped task expands its operator's arguments over (a mapping of them; anything else: unknown).
    A TaskFlow task expands over its function's arguments and passes the operator's in ``partial()``."""
    if getattr(task, "_expand_input_attr", "expand_input") != "expand_input":
        return {}
    return getattr(getattr(task, "expand_input", None), "value", None)


def _serialized_argument(task: Any, name: str) -> Any:
    """A plain serialized task's argument: from its ``advisor_json`` when the operator stores it there, else
    the attribute Airflow deserialized (template fields, ``max_active_tis_per_dag``, ...)."""
    found = _advisor_json(task) or {}
    if name in found.get("as_text", ()):
        return RunTime(f"{name} holds values the serialized DAG keeps only as text")
    if name not in getattr(operator_class(task), "advisor_arguments", ()):
        return getattr(task, name, None)
    arguments = found.get("arguments")
    if not isinstance(arguments, Mapping) or name not in arguments:
        return RunTime(f"{name} is not in the serialized DAG (serialized by an older provider version)")
    return arguments[name]
