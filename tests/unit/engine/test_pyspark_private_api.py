"""The private pyspark API the engine relies on, checked against the installed pyspark: if a release renames
or reshapes it, this fails before a Spark Connect task would."""

from __future__ import annotations

import inspect

import pytest

pytestmark = pytest.mark.unit


def test_connect_sessions_parse_ddl_on_their_server() -> None:
    from pyspark.sql.connect.session import SparkSession

    parse = SparkSession._parse_ddl
    assert list(inspect.signature(parse).parameters) == ["self", "ddl"]
    assert "ddl_parse" in inspect.getsource(parse)


def test_classic_sessions_parse_ddl_in_their_jvm() -> None:
    from pyspark.core.context import SparkContext
    from pyspark.sql.session import SparkSession

    assert list(inspect.signature(SparkSession._parse_ddl).parameters) == ["self", "ddl"]
    assert "_sc._parse_ddl" in inspect.getsource(SparkSession._parse_ddl)
    assert list(inspect.signature(SparkContext._parse_ddl).parameters) == ["self", "ddl"]
