"""Call a source function on the attempt's session and check what it returned. The function itself is in
:mod:`airflow_provider_deltacc.contract.source_function`, its travel to the driver in
:mod:`airflow_provider_deltacc.spark_job.source_travel`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from airflow_provider_deltacc.contract.exceptions import InputError, UserCodeError
from airflow_provider_deltacc.contract.source_function import SESSION_PARAMETER, SourceFunction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")

# How a Spark Python worker reports a module it cannot import, in the text of the Spark error that carries
# its traceback (a PythonException over Spark Connect, a Py4JJavaError on a classic session).
_WORKER_IMPORT_ERROR = re.compile(r"\b(ModuleNotFoundError|ImportError): No module named '([\w.]+)'")

__all__ = ["source_frame", "unimportable_module", "workers_load_the_function"]


def source_frame(source: SourceFunction, spark: SparkSession) -> DataFrame:
    """Call the function once on ``spark``; its DataFrame, checked.

    :param source: the user's function.
    :param spark: the attempt's session.
    :raises SourceFunctionError: the function raised.
    :raises InputError: it returned something other than a DataFrame of ``spark``.
    """
    from pyspark.sql import DataFrame

    result = source(spark)
    if not isinstance(result, DataFrame):
        raise InputError(
            "source",
            source.name,
            f"returned {type(result).__name__}; a source function must return a pyspark DataFrame "
            f"built from the session it is given as `{SESSION_PARAMETER}`",
        )
    if result.sparkSession is not spark:
        raise InputError(
            "source",
            source.name,
            f"returned a DataFrame of another Spark session; build it from the session the function is "
            f"given as `{SESSION_PARAMETER}` (the task's own, with the Delta settings and the table's "
            "snapshot of this attempt)",
        )
    return result


def workers_load_the_function(work: Callable[[int], T], name: str) -> Callable[[int], T]:
    """``work`` (an attempt of an operation whose source is the function ``name``), with Spark's Python
    workers failing to import a module the function's UDFs use reported as bad input.

    A UDF's Python is pickled where the function runs and loaded by Spark's Python workers: on the Spark
    Connect server in ``spark_connect`` mode, on the executors otherwise. A module the function uses by
    reference that is not installed there (a helper module only on the Airflow worker's path) fails every
    run the same way, so retrying cannot help: nothing is written and the job reports bad input naming the
    function, the module and the fix, not pyspark's traceback alone.

    :param work: the attempt.
    :param name: the source function's name.
    """

    def attempt(number: int) -> T:
        try:
            return work(number)
        except Exception as exc:
            found = unimportable_module(exc)
            if found is None:
                raise
            error, module = found
            raise InputError(
                "source",
                name,
                f"uses the module {module!r}, which Spark's Python workers cannot import ({error}: No module "
                f"named {module!r}); a UDF's Python runs there: on the Spark Connect server's machines in "
                "spark_connect mode, on the executors otherwise. Install the module where those workers run, "
                "or inline what the function uses from it (define it inside the function, which travels by "
                "value)",
            ) from exc

    return attempt


def unimportable_module(exc: BaseException) -> tuple[str, str] | None:
    """The error and the module name, when ``exc`` (or what it was raised from) is a Spark error carrying a
    Python worker's failed import; None for anything else, and for an import that failed in this process.

    :param exc: what an attempt raised.
    """
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ImportError):
            return None  # this process's own import failed: the user's code, not a worker's
        # A source function's error repeats what it raised in its text: read what it raised instead.
        match = None if isinstance(error, UserCodeError) else _WORKER_IMPORT_ERROR.search(str(error))
        if match is not None:
            return match.group(1), match.group(2)
        error = error.__cause__ or error.__context__
    return None
