"""A source function's travel to the Spark driver in ``spark_submit`` mode: its form in the JSON job spec.

The function goes by value (:func:`travel_form`): pyspark's own cloudpickle, with the module that defines it
(a DAG file, which the driver cannot import) pickled by value, base64 text in the job spec; the driver loads
it back with :func:`~airflow_provider_deltacc.contract.source_function.from_travel_form`. Imports nothing
from pyspark until a function is pickled, so the operators use it on the Airflow worker when a task starts.
Where the function runs in the worker (``in_process``, ``spark_connect``), its module is pickled by value the
same way while the operation runs (:func:`pickled_by_value`), so a UDF made of a DAG file's own function
reaches Spark's Python workers.
"""

from __future__ import annotations

import base64
import inspect
import pickle
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.source_function import SourceFunction, python_version

_by_value_lock = threading.Lock()
# How many blocks hold each module registered (by its name).
_by_value_holders: dict[str, int] = {}


def travel_form(source: SourceFunction) -> dict[str, Any]:
    """The JSON form of a source function for a Spark driver: pickled by value, base64 text.

    Context values that cannot be pickled (the task instance, the DAG run) stay behind unless the function
    names them as parameters; the user's own arguments must all travel.

    :raises InputError: naming the function and the fix, when it cannot be pickled.
    """
    from pyspark import cloudpickle

    travelling = SourceFunction(
        source.function, source.args, source.kwargs, _picklable_context(source, cloudpickle.dumps)
    )
    try:
        with pickled_by_value(source.function):
            payload = cloudpickle.dumps(travelling, protocol=pickle.DEFAULT_PROTOCOL)
    except Exception as exc:
        raise InputError(
            "source",
            source.name,
            f"cannot travel to the Spark driver (spark_submit sends it pickled by value): "
            f"{type(exc).__name__}: {exc}. Define the function at module level and give it only values "
            "that can be pickled (no open connections, locks, clients or sessions built outside it), or "
            "run the task with execution_mode='spark_connect' or 'in_process', where it runs in the worker",
        ) from None
    return {
        "kind": "callable",
        "name": source.name,
        "python": python_version(),
        "pickled": base64.b64encode(payload).decode("ascii"),
    }


@contextmanager
def pickled_by_value(function: Callable[..., Any] | None) -> Iterator[None]:
    """For the block, pyspark's cloudpickle pickles the module that defines ``function`` by value when no
    other process can be expected to import it (a DAG file, the worker's own code: see
    :func:`_defining_modules`): the function itself on its travel to a Spark driver, and the UDFs it makes
    from the module's own functions on their way to Spark's Python workers (a local session's, or a Spark
    Connect server's, which cannot import a DAG file).

    Reference counted across threads per module; a module registered before (by the application) stays.

    :param function: the source function; None does nothing.
    """
    from pyspark import cloudpickle

    modules = [] if function is None else _defining_modules(function)
    taken: list[ModuleType] = []
    with _by_value_lock:
        for module in modules:
            name = module.__name__
            if name not in _by_value_holders:
                if name in cloudpickle.list_registry_pickle_by_value():
                    continue
                cloudpickle.register_pickle_by_value(module)
            _by_value_holders[name] = _by_value_holders.get(name, 0) + 1
            taken.append(module)
    try:
        yield
    finally:
        with _by_value_lock:
            for module in taken:
                _by_value_holders[module.__name__] -= 1
                if not _by_value_holders[module.__name__]:
                    del _by_value_holders[module.__name__]
                    cloudpickle.unregister_pickle_by_value(module)


def _picklable_context(source: SourceFunction, dumps: Callable[[Any], bytes]) -> dict[str, Any]:
    named = set(inspect.signature(source.function).parameters)
    kept: dict[str, Any] = {}
    for key, value in source.context.items():
        try:
            dumps(value)
        except Exception as exc:
            if key in named:
                raise InputError(
                    "source",
                    source.name,
                    f"takes the context value {key!r}, which cannot travel to the Spark driver "
                    f"({type(exc).__name__}); take a value that can (ds, params, logical_date, ...) or run "
                    "the task with execution_mode='spark_connect' or 'in_process'",
                ) from None
            continue  # a **context function gets what can travel
        kept[key] = value
    return kept


def _defining_modules(function: Callable[..., Any]) -> list[ModuleType]:
    """The function's module when the driver cannot be expected to import it (a DAG file, a module of the
    worker's own code); an installed package's or the standard library's travels by reference."""
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    if module is None or module.__name__ == "__main__":
        return []  # cloudpickle pickles __main__ by value anyway
    location = getattr(module, "__file__", None)
    if location is None:
        return []
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib", "platstdlib")}
    path = Path(location).resolve()
    if any(path.is_relative_to(Path(root).resolve()) for root in installed):
        return []
    return [module]
