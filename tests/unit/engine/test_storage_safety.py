"""The storage-safety decision table: which paths and settings let concurrent writers commit safely."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.contract.storage_safety import (
    DYNAMODB_LOG_STORE,
    OVERRIDE_ARGUMENT,
    SINGLE_DRIVER_LOG_STORE,
    spark_storage_safety,
)
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.object_storage.writer_safety import (
    delta_rs_storage_safety,
    mixed_storage_safety,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("table", "scheme"),
    [
        ("s3://bucket/orders", "s3"),
        ("S3A://bucket/orders", "s3a"),
        ("s3n://bucket/orders", "s3n"),
        ("gs://bucket/orders", "gs"),
        ("abfss://c@acct.dfs.core.windows.net/orders", "abfss"),
        ("hdfs://nn:8020/orders", "hdfs"),
        ("file:///data/orders", "file"),
        ("/data/orders", "file"),
        ("relative/orders", "file"),
        ("C:\\data\\orders", "file"),
        ("sales.orders", "catalog"),
        ("orders", "catalog"),
    ],
)
def test_table_scheme(table: str, scheme: str) -> None:
    assert Table(table).scheme == scheme


DYNAMO = DYNAMODB_LOG_STORE


@pytest.mark.parametrize(
    ("table", "conf", "safe", "setting"),
    [
        # S3 without a multi-writer log store: unsafe, and the missing setting is named per scheme
        ("s3://b/t", {}, False, f"spark.delta.logStore.s3.impl={DYNAMO}"),
        ("s3a://b/t", {}, False, f"spark.delta.logStore.s3a.impl={DYNAMO}"),
        ("s3n://b/t", {}, False, f"spark.delta.logStore.s3n.impl={DYNAMO}"),
        ("s3a://b/t", {"spark.delta.logStore.s3a.impl": SINGLE_DRIVER_LOG_STORE}, False, "s3a.impl"),
        # the DynamoDB log store for the table's own scheme makes it safe; another scheme's does not
        ("s3a://b/t", {"spark.delta.logStore.s3a.impl": DYNAMO}, True, None),
        ("s3://b/t", {"spark.delta.logStore.s3.impl": DYNAMO}, True, None),
        ("s3a://b/t", {"spark.delta.logStore.s3.impl": DYNAMO}, False, "s3a.impl"),
        # the older single class setting covers every scheme
        ("s3a://b/t", {"spark.delta.logStore.class": DYNAMO}, True, None),
        # a custom log store is trusted
        ("s3a://b/t", {"spark.delta.logStore.s3a.impl": "com.example.MyLogStore"}, True, None),
        # storage whose log store excludes writers by itself
        ("gs://b/t", {}, True, None),
        ("abfss://c@a.dfs.core.windows.net/t", {}, True, None),
        ("wasbs://c@a.blob.core.windows.net/t", {}, True, None),
        ("hdfs://nn/t", {}, True, None),
        ("file:///tmp/t", {}, True, None),
        ("/tmp/t", {}, True, None),
        # a catalog name: its location is unknown before Spark resolves it
        ("sales.orders", {}, True, None),
    ],
)
def test_spark_decision_table(table: str, conf: dict[str, str], safe: bool, setting: str | None) -> None:
    verdict = spark_storage_safety(Table(table), conf)
    assert verdict.safe is safe, verdict
    assert verdict.engine == "spark"
    assert verdict.reason
    if safe:
        assert verdict.setting is None
    else:
        assert setting is not None and setting in (verdict.setting or ""), verdict
        message = verdict.message()
        assert table in message and DYNAMO in message and OVERRIDE_ARGUMENT in message, message


@pytest.mark.parametrize(
    ("table", "options", "environ", "safe", "setting"),
    [
        ("s3://b/t", {}, {}, True, None),  # delta-rs >= 1.0: conditional put on AWS S3
        ("s3a://b/t", {"AWS_REGION": "eu-west-1"}, {}, True, None),
        ("s3://b/t", {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, {}, False, "AWS_S3_ALLOW_UNSAFE_RENAME"),
        ("s3://b/t", {"aws_s3_allow_unsafe_rename": "TRUE"}, {}, False, "AWS_S3_ALLOW_UNSAFE_RENAME"),
        ("s3://b/t", {}, {"AWS_S3_ALLOW_UNSAFE_RENAME": "1"}, False, "AWS_S3_ALLOW_UNSAFE_RENAME"),
        ("s3://b/t", {"AWS_S3_ALLOW_UNSAFE_RENAME": "false"}, {}, True, None),
        ("s3://b/t", {"AWS_ENDPOINT_URL": "http://minio:9000"}, {}, False, "conditional_put=etag"),
        ("s3://b/t", {"AWS_ENDPOINT_URL": "http://minio:9000", "conditional_put": "etag"}, {}, True, None),
        ("s3://b/t", {}, {"AWS_ENDPOINT_URL": "http://r2"}, False, "conditional_put=etag"),
        # storage options win over the environment
        (
            "s3://b/t",
            {"AWS_S3_ALLOW_UNSAFE_RENAME": "false"},
            {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"},
            True,
            None,
        ),
        ("gs://b/t", {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}, {}, True, None),
        ("/tmp/t", {}, {}, True, None),
    ],
)
def test_delta_rs_decision_table(
    table: str, options: dict[str, Any], environ: dict[str, str], safe: bool, setting: str | None
) -> None:
    verdict = delta_rs_storage_safety(Table(table), options, environ)
    assert verdict.safe is safe, verdict
    assert verdict.engine == "delta-rs"
    if not safe:
        assert setting is not None and setting in (verdict.setting or ""), verdict


def test_spark_and_delta_rs_writers_never_share_an_s3_table() -> None:
    dynamo = {"spark.delta.logStore.s3a.impl": DYNAMO}
    mixed = mixed_storage_safety(Table("s3a://b/t"), dynamo, {}, {})
    assert not mixed.safe and mixed.engine == "spark+delta-rs" and "do not exclude each other" in mixed.reason
    # an unsafe side is reported as itself
    assert mixed_storage_safety(Table("s3a://b/t"), {}, {}, {}).engine == "spark"
    assert mixed_storage_safety(Table("gs://b/t"), {}, {}, {}).safe
