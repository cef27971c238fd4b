"""One key per table however a task spells it, different keys for different tables, and the asset URI from
the same normalized location."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import asset_uri, same_table, table_key

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("spellings", "key"),
    [
        (
            [
                "/data/orders",
                "/data/orders/",
                "/data//orders",
                "/data/./x/../orders",
                "file:///data/orders",
                "file:/data/orders/",
                "file://localhost/data/orders",
            ],
            "/data/orders",
        ),
        (
            [
                "s3://lake/orders",
                "s3a://lake/orders/",
                "s3n://lake/orders",
                "S3A://Lake/orders",
                "s3a://lake/x/../orders",
                "s3a://AKIA:secret@lake/orders",
            ],
            "s3://lake/orders",
        ),
        (
            [
                "abfss://c@acct.dfs.core.windows.net/t",
                "abfs://c@acct.dfs.core.windows.net/t/",
                "wasbs://c@ACCT.blob.core.windows.net/t",
                "wasb://c@acct.blob.core.windows.net/./t",
            ],
            "abfss://c@acct.dfs.core.windows.net/t",
        ),
        (["gs://Bucket/t/", "gs://bucket/t"], "gs://bucket/t"),
        (["hdfs://NN:8020/warehouse/t/"], "hdfs://nn:8020/warehouse/t"),
        (
            [
                "orders",
                "ORDERS",
                "default.orders",
                "`default`.`Orders`",
                "spark_catalog.default.orders",
                " Spark_Catalog.Default.Orders ",
            ],
            "spark_catalog.default.orders",
        ),
        (["sales.orders", "`sales`.orders"], "spark_catalog.sales.orders"),
        (["`we.ird`.`na``me`", "`WE.IRD`.`NA``ME`"], "spark_catalog.`we.ird`.`na``me`"),
        (["rel/orders/", "rel/./orders"], "rel/orders"),
    ],
)
def test_every_spelling_of_a_table_has_its_key(spellings: list[str], key: str) -> None:
    assert {spelling: table_key(Table(spelling)) for spelling in spellings} == dict.fromkeys(spellings, key)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("/data/orders", "/data/Orders"),  # file systems and object keys are case-sensitive
        ("s3://lake/orders", "s3://lake/orders_v2"),
        ("s3://lake/orders", "gs://lake/orders"),
        ("abfss://c1@acct.dfs.core.windows.net/t", "abfss://c2@acct.dfs.core.windows.net/t"),
        ("sales.orders", "finance.orders"),
        ("cat.sales.orders", "sales.orders"),  # another catalog
        ("/data/orders", "data/orders"),  # a relative path is not resolved against anything
    ],
)
def test_different_tables_keep_different_keys(a: str, b: str) -> None:
    assert not same_table(Table(a), Table(b))


@pytest.mark.parametrize(
    ("name", "uri"),
    [
        ("/data//x/../orders/", "file:///data/orders"),
        ("file://localhost/data/orders", "file:///data/orders"),
        ("s3a://AKIA:secret@Lake/orders/", "s3://lake/orders"),
        ("wasbs://c@ACCT.blob.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t"),
        ("`Sales`.Orders", "x-deltacc-table://spark_catalog/sales/orders"),
        ("unity.sales.orders", "x-deltacc-table://unity/sales/orders"),
    ],
)
def test_the_asset_uri_is_the_normalized_location_every_spelling_shares(name: str, uri: str) -> None:
    if "`" in name:
        with pytest.raises(InputError, match="neither a path nor a catalog name"):
            asset_uri(Table(name))
        return
    assert asset_uri(Table(name)) == uri


@pytest.mark.parametrize(("name", "why"), [("rel/orders", "relative path"), ("C:\\t\\o", "Windows path")])
def test_no_asset_uri_for_a_location_only_the_worker_can_resolve(name: str, why: str) -> None:
    with pytest.raises(InputError, match=why) as caught:
        asset_uri(Table(name))
    assert caught.value.field == "table"
