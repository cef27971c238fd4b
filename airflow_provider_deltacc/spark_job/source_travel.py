"""A source function's travel to the Spark driver in ``spark_submit`` mode: its form in the JSON job spec.

The function goes by value (:func:`travel_form`): pyspark's own cloudpickle, with the module that defines it
(a DAG file, which the driver cannot import) pickled by value
(:func:`~airflow_provider_deltacc.engine.by_value.pickled_by_value`), base64 text in the job spec; the driver
loads it back with :func:`~airflow_provider_deltacc.contract.source_function.from_travel_form`. Imports
nothing from pyspark until a function is pickled, so the operators use it on the Airflow worker when a task
starts.
"""

from __future__ import annotations

import base64
import inspect
import pickle
from collections.abc import Callable
from typing import Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.source_function import SourceFunction, python_version
from airflow_provider_deltacc.engine.by_value import pickled_by_value


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
