"""Reading ``DESCRIBE TABLE EXTENDED`` output (as Spark 4.2 with Delta 4.4 prints it) into partitions and
location, without a server; the integration tests read real output on the test run's Connect server."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.engine.backend_connect import _Description

pytestmark = pytest.mark.unit

CATALOG_TABLE = [
    ("id", "int"),
    ("d", "string"),
    ("e", "date"),
    ("# Partition Information", ""),
    ("# col_name", "data_type"),
    ("d", "string"),
    ("e", "date"),
    ("", ""),
    ("# Detailed Table Information", ""),
    ("Catalog", "spark_catalog"),
    ("Table", "cat_t"),
    ("Location", "file:/warehouse/cat_t"),
    ("Provider", "delta"),
    ("Table Properties", "[delta.minReaderVersion=1,x.y=a,b=c]]"),
]


def test_partitions_and_location_of_a_partitioned_catalog_table() -> None:
    described = _Description.parse(Table("cat_t"), CATALOG_TABLE)
    assert described == _Description(("d", "e"), "file:/warehouse/cat_t")


def test_an_unpartitioned_path_table_without_a_location_row_uses_its_path() -> None:
    rows = [("id", "int"), ("", ""), ("# Detailed Table Information", ""), ("Provider", "delta")]
    assert _Description.parse(Table("/lake/t"), rows) == _Description((), "/lake/t")


def test_a_table_of_another_provider_is_not_delta() -> None:
    rows = [("id", "int"), ("", ""), ("# Detailed Table Information", ""), ("Provider", "parquet")]
    assert _Description.parse(Table("pq_t"), rows) is None
