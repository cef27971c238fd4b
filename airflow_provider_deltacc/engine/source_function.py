"""Call a source function on the attempt's session and check what it returned. The function itself moved to
:mod:`airflow_provider_deltacc.contract.source_function` and its travel to the driver to
:mod:`airflow_provider_deltacc.spark_job.source_travel`; their names are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.source_function import (
    SESSION_PARAMETER,
    SourceFunction,
    SourceFunctionError,
    function_name,
    python_version,
    takes_session_by_name,
)
from airflow_provider_deltacc.spark_job.source_travel import from_travel_form, travel_form

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SESSION_PARAMETER",
    "SourceFunction",
    "SourceFunctionError",
    "from_travel_form",
    "function_name",
    "python_version",
    "source_frame",
    "takes_session_by_name",
    "travel_form",
]


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
