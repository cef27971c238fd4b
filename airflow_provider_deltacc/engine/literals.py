"""Which string-literal mode a Spark session parses in. The quoting itself is in
:mod:`airflow_provider_deltacc.contract.literals`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ESCAPED_STRING_LITERALS_CONF", "escaped_string_literals"]

ESCAPED_STRING_LITERALS_CONF = "spark.sql.parser.escapedStringLiterals"


def escaped_string_literals(spark: SparkSession) -> bool:
    """Return whether the session parses string literals without backslash escapes.

    :param spark: the session whose parser will read the SQL.
    """
    return str(spark.conf.get(ESCAPED_STRING_LITERALS_CONF, "false")).lower() == "true"
