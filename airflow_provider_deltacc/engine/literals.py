"""Which string-literal mode a Spark session parses in. The quoting itself moved to
:mod:`airflow_provider_deltacc.contract.literals`; its names are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.literals import (
    LiteralError,
    SparkType,
    embedded_expression,
    equals_predicate,
    in_predicate,
    quote_identifier,
    sql_literal,
    string_literal,
    type_name,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "ESCAPED_STRING_LITERALS_CONF",
    "LiteralError",
    "SparkType",
    "embedded_expression",
    "equals_predicate",
    "escaped_string_literals",
    "in_predicate",
    "quote_identifier",
    "sql_literal",
    "string_literal",
    "type_name",
]

ESCAPED_STRING_LITERALS_CONF = "spark.sql.parser.escapedStringLiterals"


def escaped_string_literals(spark: SparkSession) -> bool:
    """Return whether the session parses string literals without backslash escapes.

    :param spark: the session whose parser will read the SQL.
    """
    return str(spark.conf.get(ESCAPED_STRING_LITERALS_CONF, "false")).lower() == "true"
