"""A table named once: a path or a catalog name, its storage and scheme, its SQL reference, and a checked
argument that names the field."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import Storage, is_relative, storage

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("bad", ["", "   ", None, 7])
def test_a_table_must_be_a_non_empty_string(bad: object) -> None:
    with pytest.raises(ValueError, match="must be a non-empty string"):
        Table(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "kind", "scheme", "uri_scheme"),
    [
        ("/data/orders", Storage.LOCAL, "file", ""),
        ("file:///data/orders", Storage.LOCAL, "file", "file"),
        ("rel/orders", Storage.LOCAL, "file", ""),
        ("s3a://lake/orders", Storage.S3, "s3a", "s3a"),
        ("S3N://lake/orders", Storage.S3, "s3n", "s3n"),
        ("wasbs://c@acct.blob.core.windows.net/t", Storage.ABFS, "wasbs", "wasbs"),
        ("az://c/t", Storage.ABFS, "az", "az"),
        ("gs://bucket/t", Storage.GCS, "gs", "gs"),
        ("hdfs://nn:8020/t", Storage.HDFS, "hdfs", "hdfs"),
        ("dbfs:/mnt/t", Storage.OTHER, "dbfs", "dbfs"),
        ("C:\\data\\orders", Storage.LOCAL, "file", ""),  # a drive letter is no scheme
        ("c:/data/orders", Storage.LOCAL, "file", ""),
        ("sales.orders", Storage.CATALOG, "catalog", ""),
    ],
)
def test_a_table_knows_its_storage_and_the_scheme_it_was_spelled_with(
    name: str, kind: Storage, scheme: str, uri_scheme: str
) -> None:
    table = Table(name)
    assert (storage(table), table.scheme, table.is_path) == (kind, scheme, kind is not Storage.CATALOG)
    assert table.uri_scheme == uri_scheme


@pytest.mark.parametrize(
    ("name", "relative"),
    [
        ("rel/orders", True),
        ("./orders/x", True),
        ("/data/orders", False),
        ("s3://b/t", False),
        ("orders", False),
    ],
)
def test_only_a_scheme_less_path_off_the_root_is_relative(name: str, relative: bool) -> None:
    assert is_relative(Table(name)) is relative


@pytest.mark.parametrize(
    ("name", "sql"),
    [
        ("/data/orders", "delta.`/data/orders`"),
        ("/data/we`ird", "delta.`/data/we``ird`"),
        ("sales.orders", "`sales`.`orders`"),
    ],
)
def test_the_sql_reference_quotes_every_part(name: str, sql: str) -> None:
    assert Table(name).sql == sql


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "non-empty string"),
        (None, "non-empty string"),
        ("orders-2026", "neither a path"),
        ("a.b.c.d", "neither a path"),
        ("/data/${env}/orders", "Spark would substitute it"),
    ],
)
def test_a_checked_argument_names_the_field_and_the_fix(value: object, why: str) -> None:
    with pytest.raises(InputError, match=why) as caught:
        Table.of(value, "target_table")
    assert (caught.value.field, caught.value.value) == ("target_table", value)


def test_a_checked_argument_keeps_the_spelling_spark_gets() -> None:
    table = Table.of("s3a://Lake/orders/")
    assert table.name == str(table) == "s3a://Lake/orders/"
    assert Table.of(table) is table
    assert Table("/data/orders").local_path is not None and Table("s3://b/t").local_path is None
