"""Quoting values as Spark SQL literals of a column type, and identifiers."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from airflow_provider_deltacc.contract.exceptions import LiteralError
from airflow_provider_deltacc.contract.literals import (
    equals_predicate,
    in_predicate,
    quote_identifier,
    sql_literal,
    string_literal,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "data_type", "expected"),
    [
        ("abc", "string", "'abc'"),
        ("x' OR '1'='1", "string", "'x'' OR ''1''=''1'"),
        ("back\\slash'", "string", "'back\\\\slash'''"),
        ("${env:HOME}", "string", "'$\\{env:HOME}'"),
        ("o'k", "varchar(10)", "'o''k'"),
        (True, "boolean", "TRUE"),
        ("false", "boolean", "FALSE"),
        (5, "int", "5"),
        ("-7", "bigint", "-7L"),
        (3, "tinyint", "3Y"),
        (1.5, "double", "CAST('1.5' AS DOUBLE)"),
        (float("nan"), "float", "CAST('NaN' AS FLOAT)"),
        ("12.30", "decimal(5,2)", "CAST('12.30' AS DECIMAL(5,2))"),
        (Decimal("1.50"), "decimal(3,1)", "CAST('1.50' AS DECIMAL(3,1))"),
        ("2026-11-20", "date", "DATE '2026-11-20'"),
        (date(2026, 11, 20), "date", "DATE '2026-11-20'"),
        ("2026-11-20T10:00:00", "timestamp", "TIMESTAMP '2026-11-20 10:00:00'"),
        (
            datetime(2026, 11, 20, 10, tzinfo=timezone(timedelta(hours=2))),
            "timestamp",
            "TIMESTAMP '2026-11-20 10:00:00+02:00'",
        ),
        ("2026-11-20 10:00:00.5", "timestamp_ntz", "TIMESTAMP_NTZ '2026-11-20 10:00:00.500000'"),
        (b"\x00\xff", "binary", "X'00FF'"),
        (None, "date", "NULL"),
    ],
)
def test_sql_literal(value: Any, data_type: str, expected: str) -> None:
    assert sql_literal(value, data_type) == expected


@pytest.mark.parametrize(
    ("value", "data_type"),
    [
        (5, "string"),
        ("2026-13-01", "date"),
        ("2026-11-20'); DROP TABLE x; --", "date"),
        (datetime(2026, 1, 1), "date"),
        ("1 OR 1=1", "int"),
        (2**31, "int"),
        (True, "int"),
        ("maybe", "boolean"),
        ("1e400x", "double"),
        ("123.456", "decimal(5,2)"),
        ("12345", "decimal(5,2)"),
        ("nan", "decimal(5,2)"),
        ("yesterday", "timestamp"),
        ("2026-11-20 10:00:00+02:00", "timestamp_ntz"),
        ([1], "array<int>"),
    ],
)
def test_sql_literal_refuses_invalid_values(value: Any, data_type: str) -> None:
    with pytest.raises(LiteralError):
        sql_literal(value, data_type)


def test_escaped_mode_hex_encodes_strings_that_need_escaping() -> None:
    assert string_literal("plain", escaped=True) == "'plain'"
    assert string_literal("a'b", escaped=True) == "CAST(X'612762' AS STRING)"
    assert string_literal("a\\", escaped=True) == "CAST(X'615C' AS STRING)"


def test_quote_identifier() -> None:
    assert quote_identifier("date") == "`date`"
    assert quote_identifier("we`ird") == "`we``ird`"
    with pytest.raises(LiteralError):
        quote_identifier("")
    with pytest.raises(LiteralError):
        quote_identifier("${x}")


def test_predicates_handle_null() -> None:
    assert equals_predicate("`c`", None, "string") == "`c` IS NULL"
    assert in_predicate("`d`", ["2026-11-20", None, "2026-11-20"], "date") == (
        "(`d` IN (DATE '2026-11-20') OR `d` IS NULL)"
    )
    assert in_predicate("`d`", [None], "date") == "(`d` IS NULL)"
    with pytest.raises(LiteralError):
        in_predicate("`d`", [], "date")
