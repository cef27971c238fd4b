"""A source function's own module pickled by value while it runs, with pyspark's cloudpickle: the function on
its travel to a Spark driver (:mod:`airflow_provider_deltacc.spark_job.source_travel`), and the UDFs it makes
of the module's own functions on their way to Spark's Python workers (a local session's, or a Spark Connect
server's, which cannot import a DAG file). Imports pyspark only when a block starts.
"""

from __future__ import annotations

import sys
import sysconfig
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

_by_value_lock = threading.Lock()
# How many blocks hold each module registered (by its name).
_by_value_holders: dict[str, int] = {}


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
