"""A source given as the user's own PySpark code: a function of the Spark session that returns a DataFrame.

The commit loop calls it afresh in every attempt, after the writer's turn and on the attempt's snapshot,
so nothing it computed in an earlier attempt (a ``collect()`` of a balance, a lookup broadcast as a literal)
is reused. What it raises is the user's (:class:`SourceFunctionError`): never a conflict, never retried
in the job, so the failure goes to Airflow's retries. What it returns must be a DataFrame of the session
it was given; anything else is bad input naming the function.

Plain Python, no pyspark: the operators and decorators bind the function here. Calling it on a session and
checking its DataFrame is the engine's (:func:`airflow_provider_deltacc.engine.source_function.source_frame`);
its travel to a Spark driver in ``spark_submit`` mode is the job's
(:mod:`airflow_provider_deltacc.spark_job.source_travel`), and the driver loads it back from the job spec
here (:func:`from_travel_form`, plain :mod:`pickle`).
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import pickle
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_deltacc.contract.exceptions import InputError, SourceFunctionError

#: The parameter a source function receives the Spark session by.
SESSION_PARAMETER = "spark"


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


@dataclass(frozen=True)
class SourceFunction:
    """The user's function with the arguments it is called with, besides the session.

    :param function: called as ``function(*args, spark=session, **kwargs, **context)`` (as
        ``function(session, ...)`` when it has no parameter named ``spark``); returns the source DataFrame.
    :param args: positional arguments (a decorated task's ``op_args``).
    :param kwargs: keyword arguments the user gave (a decorated task's ``op_kwargs``).
    :param context: the Airflow context values the function asks for by name (``ds``, ``params``, ...).
    :param travelled: the JSON form it was loaded from (pickled by the worker for a Spark driver), if it was.
    """

    function: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    context: Mapping[str, Any] = field(default_factory=dict)
    travelled: Mapping[str, str] | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return function_name(self.function)

    def __call__(self, spark: Any) -> Any:
        """Call the function once with the session; what it returned, unchecked (the engine checks that it
        is a DataFrame of ``spark``: :func:`airflow_provider_deltacc.engine.source_function.source_frame`).

        :raises SourceFunctionError: the function raised.
        """
        keywords = {**self.context, **self.kwargs}
        try:
            if takes_session_by_name(self.function):
                return self.function(*self.args, **keywords, **{SESSION_PARAMETER: spark})
            # a plain function of one session argument, e.g. ``lambda session: ...``
            return self.function(spark, *self.args, **keywords)
        except Exception as exc:
            raise SourceFunctionError(self.name, exc) from exc


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
    travelled = {"kind": "callable", "name": name, "python": python, "pickled": pickled}
    return dataclasses.replace(loaded, travelled=travelled)
