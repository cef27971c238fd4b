"""A source given as the user's own PySpark code: a function of the Spark session that returns a DataFrame.

The commit loop calls it afresh in every attempt, after the writer's turn and on the attempt's snapshot,
so nothing it computed in an earlier attempt (a ``collect()`` of a balance, a lookup broadcast as a literal)
is reused. What it raises is the user's (:class:`SourceFunctionError`): never a conflict, never retried
in the job, so the failure goes to Airflow's retries. What it returns must be a DataFrame of the session
it was given; anything else is bad input naming the function.

In ``spark_submit`` mode the function travels to the Spark driver by value (:func:`travel_form`):
pyspark's own cloudpickle, with the module that defines it (a DAG file, which the driver cannot import)
pickled by value, base64 text in the job spec. Imports nothing from pyspark until a function is pickled.
"""

from __future__ import annotations

import base64
import inspect
import pickle
import sys
import sysconfig
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.errors import InputError
from airflow_provider_deltacc.occ.errors import UserCodeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The parameter a source function receives the Spark session by.
SESSION_PARAMETER = "spark"
_TRACEBACK_LIMIT = 1500


def function_name(function: Callable[..., Any]) -> str:
    """``module.qualname`` of a function, for messages (``repr`` of any other callable)."""
    qualname = getattr(function, "__qualname__", None)
    if qualname is None:
        return repr(function)
    module = getattr(function, "__module__", None)
    return f"{module}.{qualname}" if module and not module.startswith("unusual_prefix_") else qualname


def takes_session_by_name(function: Callable[..., Any]) -> bool:
    """Whether ``function`` has a parameter named ``spark`` or takes ``**kwargs`` (the decorators' and the
    operators' convention); else it gets the session as its first positional argument. Read from the code
    itself: a decorated task's function shows Airflow a signature without the session."""
    code = getattr(function, "__code__", None)
    if code is not None:
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        return SESSION_PARAMETER in names or bool(code.co_flags & inspect.CO_VARKEYWORDS)
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == SESSION_PARAMETER or p.kind is p.VAR_KEYWORD for p in parameters)


def python_version() -> str:
    """This interpreter's ``major.minor``: a pickled function loads only where it is the same."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


class SourceFunctionError(UserCodeError):
    """The source function raised: its name, the exception and the function's own frames of the traceback.

    :param name: the function's name.
    :param error: what it raised.
    """

    def __init__(self, name: str, error: BaseException) -> None:
        frames = traceback.format_exception(type(error), error, error.__traceback__)
        # Drop the frame of SourceFunction.__call__: the traceback starts in the user's function.
        text = "".join(frames[:1] + frames[2:]) if len(frames) > 2 else "".join(frames)
        if len(text) > _TRACEBACK_LIMIT:
            text = "...\n" + text[-_TRACEBACK_LIMIT:]
        super().__init__(f"source function {name} raised {type(error).__name__}: {error}\n{text}")
        self.name = name
        self.error_type = type(error).__name__

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt_error, (type(self), str(self), self.name, self.error_type)


def _rebuilt_error(cls: type[SourceFunctionError], message: str, name: str, error_type: str) -> Any:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.name, error.error_type = name, error_type
    return error


@dataclass(frozen=True)
class SourceFunction:
    """The user's function with the arguments it is called with, besides the session.

    :param function: called as ``function(*args, spark=session, **kwargs, **context)`` (as
        ``function(session, ...)`` when it has no parameter named ``spark``); returns the source DataFrame.
    :param args: positional arguments (a decorated task's ``op_args``).
    :param kwargs: keyword arguments the user gave (a decorated task's ``op_kwargs``).
    :param context: the Airflow context values the function asks for by name (``ds``, ``params``, ...).
    """

    function: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return function_name(self.function)

    def __call__(self, spark: SparkSession) -> DataFrame:
        """Call the function once; its DataFrame, checked.

        :raises SourceFunctionError: the function raised.
        :raises InputError: it returned something other than a DataFrame of ``spark``.
        """
        keywords = {**self.context, **self.kwargs}
        try:
            if takes_session_by_name(self.function):
                result = self.function(*self.args, **keywords, **{SESSION_PARAMETER: spark})
            else:  # a plain function of one session argument, e.g. ``lambda session: ...``
                result = self.function(spark, *self.args, **keywords)
        except Exception as exc:
            raise SourceFunctionError(self.name, exc) from exc
        from pyspark.sql import DataFrame

        if not isinstance(result, DataFrame):
            raise InputError(
                "source",
                self.name,
                f"returned {type(result).__name__}; a source function must return a pyspark DataFrame "
                f"built from the session it is given as `{SESSION_PARAMETER}`",
            )
        if result.sparkSession is not spark:
            raise InputError(
                "source",
                self.name,
                f"returned a DataFrame of another Spark session; build it from the session the function is "
                f"given as `{SESSION_PARAMETER}` (the task's own, with the Delta settings and the table's "
                "snapshot of this attempt)",
            )
        return result


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
    modules = _defining_modules(source.function)
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
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
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)
    return {
        "kind": "callable",
        "name": source.name,
        "python": python_version(),
        "pickled": base64.b64encode(payload).decode("ascii"),
    }


def from_travel_form(name: str, python: str, pickled: str) -> SourceFunction:
    """Load a source function the worker pickled (:func:`travel_form`), on the Spark driver.

    :raises InputError: naming the function and the fix, when this Python cannot load it.
    """
    if python != python_version():
        raise InputError(
            "source",
            name,
            f"was pickled by Python {python} on the Airflow worker, and the Spark driver runs Python "
            f"{python_version()}; a function travels only between equal Python versions: run the driver "
            f"with Python {python} (the operator's driver_python, or PYSPARK_DRIVER_PYTHON on the cluster)",
        )
    try:
        loaded = pickle.loads(base64.b64decode(pickled.encode("ascii"), validate=True))
    except Exception as exc:
        raise InputError(
            "source",
            name,
            f"cannot be loaded on the Spark driver: {type(exc).__name__}: {exc}. Everything the function "
            "uses by reference (installed packages) must be installed on the driver too",
        ) from None
    if not isinstance(loaded, SourceFunction):
        raise InputError("source", name, f"unpickled to {type(loaded).__name__}, not a source function")
    return loaded


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
