"""Turn an operator's ``source`` argument into the job's typed source.

A source may be the user's own PySpark code: a function of the Spark session that returns the DataFrame
(:mod:`airflow_provider_deltacc.contract.source_function`). It is bound here to the Airflow context values it
asks for by name; in ``spark_submit`` mode it is pickled for the driver when the task starts, before any
lease or write, so a function that cannot travel fails the task at once.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.contract.source_function import (
    SESSION_PARAMETER,
    SourceFunction,
    function_name,
    python_version,
    takes_session_by_name,
)
from airflow_provider_deltacc.contract.spec import SourceSpec
from airflow_provider_deltacc.contract.spec_sources import callable_source, source_of, travelled_source
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.spark_job.source_travel import travel_form


@dataclass(frozen=True)
class SourceFunctionArgument:
    """A writer's source function as the operator keeps it in ``source``: not callable itself, because
    Airflow renders a callable template field by calling it with the context.

    :param function: the user's function of the Spark session.
    """

    function: Callable[..., Any]

    def __repr__(self) -> str:
        return f"<source function {function_name(self.function)}>"


#: What a writer's ``source`` may be: a string shorthand, the dict form, or a source function.
SourceArgument = str | dict[str, Any] | Callable[..., Any] | SourceFunctionArgument

_SQL_START = re.compile(r"^\s*(select|with|values|table)\b", re.IGNORECASE)
_FILE_KINDS = {".parquet": "parquet", ".csv": "csv"}


def source_spec(
    source: SourceArgument | None,
    *,
    field: str = "source",
    context: Mapping[str, Any] | None = None,
) -> SourceSpec | None:
    """The typed source from the full dict form, a string shorthand (see :func:`source_form`), or a source
    function.

    A function gets the Spark session as ``spark`` and the context values it names (``ds``, ``params``, ...;
    all of them when it takes ``**kwargs``).

    :param source: the operator's ``source`` argument, after templating.
    :param field: the argument name for error messages.
    :param context: the task's context, for a source function.
    :raises SpecError: naming ``source.<key>`` for a source that is not valid.
    """
    if isinstance(source, SourceFunctionArgument):
        source = source.function
    if callable(source):
        return callable_source(function=bind_source_function(source, context or {}))
    form = source_form(source, field=field)
    return None if form is None else source_of(form)


def source_form(source: str | dict[str, Any] | None, *, field: str = "source") -> dict[str, Any] | None:
    """The dict form of a source argument that is not a function: a dict as it is, a string shorthand
    expanded.

    A string is a SQL query when it starts with SELECT/WITH/VALUES/TABLE, a parquet or CSV path when it
    ends with ``.parquet``/``.csv``, a Delta table path when it contains ``/``, and otherwise a catalog
    table name. The dict form (``{"kind": "csv", "path": ..., "options": {...}}``) says it explicitly.

    :param source: the argument.
    :param field: the argument name for error messages.
    :raises DeltaCCInputError: naming ``field`` when it is no source.
    """
    if source is None or isinstance(source, dict):
        return source
    if not isinstance(source, str) or not source.strip():
        raise DeltaCCInputError(
            f"{field}={source!r} is not a source; give a table name or path, a parquet/CSV path, a SQL "
            'query, or a dict such as {"kind": "delta", "path": "/data/raw"}',
            field=field,
            value=source,
        )
    text = source.strip()
    if _SQL_START.match(text):
        return {"kind": "sql", "query": text}
    for suffix, kind in _FILE_KINDS.items():
        if text.lower().rstrip("/").endswith(suffix):
            return {"kind": kind, "path": text}
    if Table(text).is_path:
        return {"kind": "delta", "path": text}
    return {"kind": "table", "name": text}


def kept_source(source: SourceArgument | None, *, task_id: str) -> SourceArgument | None:
    """The ``source`` argument as a writer keeps it: a function checked and wrapped (see
    :class:`SourceFunctionArgument`), anything else as it is."""
    if callable(source):
        check_source_function(source, task_id=task_id)
        return SourceFunctionArgument(source)
    return source


def check_source_function(function: Callable[..., Any], *, task_id: str, field: str = "source") -> None:
    """Refuse, when the DAG is parsed, a function that cannot take the Spark session.

    :raises DeltaCCInputError: naming the field and the function.
    """
    if takes_session_by_name(function):
        return
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not any(p.kind in (*positional, p.VAR_POSITIONAL) for p in parameters):
        name = function_name(function)
        raise DeltaCCInputError(
            f"{task_id}: {field}={name} takes no parameter for the Spark session; a source function is "
            f"called as {name}(spark=<the task's session>) and returns the DataFrame to write: add a "
            f"`{SESSION_PARAMETER}` parameter",
            field=field,
            value=name,
        )


def bind_source_function(
    function: Callable[..., Any],
    context: Mapping[str, Any],
    *,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
) -> SourceFunction:
    """The function with its arguments and the context values it asks for (as Airflow's own decorators
    choose them: by parameter name, or every value for ``**kwargs``)."""
    from airflow.sdk.bases.decorator import KeywordParameters

    own = dict(kwargs or {})
    wanted = KeywordParameters.determine(function, args, context).unpacking()
    chosen = {key: value for key, value in wanted.items() if key != SESSION_PARAMETER and key not in own}
    return SourceFunction(function, tuple(args), own, chosen)


def travelling_source(
    source: SourceSpec | None, *, task_id: str, driver_python: str | None = None
) -> SourceSpec | None:
    """The job's source as a ``spark_submit`` driver gets it: a source function pickled by value.

    :param source: the spec's source.
    :param task_id: the task, for messages.
    :param driver_python: the driver's interpreter when the operator names one; checked for the Python
        version the function was pickled by when it is a program on this machine (a client-mode driver).
    :raises DeltaCCInputError: naming ``source`` (or ``driver_python``) and the fix.
    """
    function = source.function if source is not None else None
    if function is None or function.travelled is not None:
        return source
    from airflow_provider_deltacc.contract.exceptions import InputError

    try:
        travelling = travel_form(function)
    except InputError as exc:
        raise DeltaCCInputError(f"{task_id}: {exc}", field=exc.field, value=function.name) from None
    if driver_python and os.path.isfile(driver_python) and os.access(driver_python, os.X_OK):
        version = _python_version_of(driver_python)
        if version is not None and version != python_version():
            raise DeltaCCInputError(
                f"{task_id}: driver_python={driver_python!r} is Python {version}, and the source function "
                f"{function.name} is pickled by Python {python_version()} here; a function travels only "
                f"between equal Python versions: give a Python {python_version()} driver_python",
                field="driver_python",
                value=driver_python,
            )
    return travelled_source(
        name=travelling["name"], python=travelling["python"], pickled=travelling["pickled"]
    )


def _python_version_of(python: str) -> str | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
