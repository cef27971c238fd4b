"""The put-if-absent S3 log store: the default where the user set none, the storage verdicts it brings."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.storage_safety import (
    DYNAMODB_LOG_STORE,
    PUT_IF_ABSENT_LOG_STORE,
    mixed_storage_safety,
    spark_storage_safety,
    without_conditional_writes,
)
from airflow_provider_deltacc.spark_jars import put_if_absent
from airflow_provider_deltacc.spark_jars.delta_jars import cached_jars

pytestmark = pytest.mark.unit

DEFAULTS = {
    "spark.delta.logStore.s3a.impl": PUT_IF_ABSENT_LOG_STORE,
    "spark.delta.logStore.s3.impl": PUT_IF_ABSENT_LOG_STORE,
}


def test_the_set_up_built_it_from_source_and_every_spark_gets_it() -> None:
    jar = put_if_absent.cached_log_store_jar()
    assert jar is not None and jar.parent == put_if_absent.jar_dir()
    assert jar in cached_jars()
    assert put_if_absent.java_source().is_file()
    assert put_if_absent.log_store_defaults({}) == DEFAULTS


@pytest.mark.parametrize(
    "conf",
    [
        {"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE},
        {"spark.delta.logStore.s3.impl": "com.example.MyLogStore"},
        {"spark.delta.logStore.class": "io.delta.storage.S3SingleDriverLogStore"},
        {put_if_absent.SWITCH_CONF: "false"},
    ],
    ids=["dynamodb", "custom", "legacy-class", "switched-off"],
)
def test_a_log_store_of_the_users_own_is_left_alone(conf: dict[str, str]) -> None:
    assert put_if_absent.log_store_defaults(conf) == {}


def test_without_its_jar_nothing_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTACC_JAR_CACHE", str(tmp_path))
    assert put_if_absent.cached_log_store_jar() is None
    assert put_if_absent.log_store_defaults({}) == {}


def test_it_makes_s3_safe_unless_the_store_lacks_conditional_writes() -> None:
    verdict = spark_storage_safety("s3a://lake/t", DEFAULTS)
    assert verdict.safe and verdict.log_store == PUT_IF_ABSENT_LOG_STORE
    unsafe = without_conditional_writes(verdict, "http://minio:9000", "it ignores If-None-Match")
    assert not unsafe.safe
    assert "http://minio:9000" in unsafe.message() and "ignores If-None-Match" in unsafe.message()
    assert unsafe.setting == f"spark.delta.logStore.s3a.impl={DYNAMODB_LOG_STORE}"


def test_spark_with_it_and_delta_rs_exclude_each_other_on_one_table() -> None:
    both = mixed_storage_safety("s3a://lake/t", DEFAULTS)
    assert both.safe and both.engine == "spark+delta-rs"
    dynamodb = {"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE}
    assert not mixed_storage_safety("s3a://lake/t", dynamodb).safe
