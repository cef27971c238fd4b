"""The typed source of a job spec: read from its dict form (an operator's ``source`` argument, the JSON the
Spark driver reads), or built around a source function (the operators' and ``conflict_safe``'s own code).

Every problem raises :class:`~airflow_provider_deltacc.contract.exceptions.SpecError` naming the field
(``source.<key>``), the bad value and the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.source_function import SourceFunction, from_travel_form
from airflow_provider_deltacc.contract.spec import SOURCE_KINDS, SourceSpec
from airflow_provider_deltacc.contract.spec_fields import Fields
from airflow_provider_deltacc.contract.table import CATALOG_NAME_RE

__all__ = ["callable_source", "source_of", "travelled_source"]

_PATH = "source"


def callable_source(*, function: SourceFunction | Callable[..., Any]) -> SourceSpec:
    """The user's own PySpark code, in this process: a function of the session returning the DataFrame.

    :param function: the function, bare or with its bound arguments.
    :raises SpecError: naming ``source.function`` when it is not callable.
    """
    return SourceSpec("callable", function=_function(function))


def travelled_source(*, name: Any, python: Any, pickled: Any) -> SourceSpec:
    """A source function pickled by a worker for a Spark driver (see
    :func:`~airflow_provider_deltacc.spark_job.source_travel.travel_form`), loaded back.

    :param name: the function's name.
    :param python: the Python version that pickled it.
    :param pickled: the pickle, base64 text.
    :raises SpecError: naming the missing field.
    :raises InputError: when this Python cannot load the function.
    """
    fields = Fields({"kind": "callable", "name": name, "python": python, "pickled": pickled}, _PATH)
    return SourceSpec("callable", function=_travelled(fields))


def source_of(raw: Any) -> SourceSpec:
    """The source in its dict form, e.g. ``{"kind": "delta", "path": "/data/raw"}``.

    :param raw: the dict form.
    :raises SpecError: on the first problem found.
    """
    src = Fields(raw, _PATH)
    kind = src.data.get("kind")
    if kind not in SOURCE_KINDS:
        raise SpecError("source.kind", kind, f"unknown source kind; use one of {', '.join(SOURCE_KINDS)}")
    if kind == "delta":
        src.only(("kind", "path", "version"), "a delta source")
        return _delta(src)
    if kind == "table":
        src.only(("kind", "name"), "a table source")
        return _table(src)
    if kind in ("parquet", "csv"):
        src.only(("kind", "path", "options", "schema"), f"a {kind} source")
        return _file(src)
    if kind == "sql":
        src.only(("kind", "query"), "a sql source")
        return _sql(src)
    if kind == "callable":
        if "function" in src.data:
            src.only(("kind", "function"), "a callable source")
            return SourceSpec("callable", function=_function(src.data["function"]))
        src.only(("kind", "name", "python", "pickled"), "a callable source")
        return SourceSpec("callable", function=_travelled(src))
    src.only(("kind", "rows", "schema"), "a rows source")
    return _rows(src)


def _delta(src: Fields) -> SourceSpec:
    return SourceSpec("delta", path=src.string("path", required=True), version=src.integer("version", None))


def _table(src: Fields) -> SourceSpec:
    name = src.string("name", required=True)
    if name is None or not CATALOG_NAME_RE.fullmatch(name):
        raise SpecError("source.name", name, "must be a catalog name like 'db.table'")
    return SourceSpec("table", name=name)


def _file(src: Fields) -> SourceSpec:
    return SourceSpec(
        src.data["kind"],
        path=src.string("path", required=True),
        options=src.mapping("options", values="conf"),
        schema=src.string("schema"),
    )


def _sql(src: Fields) -> SourceSpec:
    return SourceSpec("sql", query=src.sql("query", required=True))


def _rows(src: Fields) -> SourceSpec:
    rows = src.data.get("rows")
    if not isinstance(rows, list):
        raise SpecError("source.rows", rows, "must be a list of rows (lists in schema order, or objects)")
    return SourceSpec("rows", rows=tuple(rows), schema=src.string("schema", required=True))


def _function(function: Any) -> SourceFunction:
    if isinstance(function, SourceFunction):
        return function
    if not callable(function):
        raise SpecError("source.function", function, "must be a function of the Spark session")
    return SourceFunction(function)


def _travelled(src: Fields) -> SourceFunction:
    name = src.string("name", required=True)
    python = src.string("python", required=True)
    pickled = src.string("pickled", required=True)
    assert name is not None and python is not None and pickled is not None
    return from_travel_form(name, python, pickled)
