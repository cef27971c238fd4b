"""The put-if-absent S3 log store: the default where the user set none, the storage verdicts it brings."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.storage_safety import (
    DYNAMODB_LOG_STORE,
    PUT_IF_ABSENT_LOG_STORE,
    spark_storage_safety,
)
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.object_storage.writer_safety import (
    mixed_storage_safety,
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
    verdict = spark_storage_safety(Table("s3a://lake/t"), DEFAULTS)
    assert verdict.safe and verdict.log_store == PUT_IF_ABSENT_LOG_STORE
    unsafe = without_conditional_writes(verdict, "http://minio:9000", "it ignores If-None-Match")
    assert not unsafe.safe
    assert "http://minio:9000" in unsafe.message() and "ignores If-None-Match" in unsafe.message()
    assert unsafe.setting == f"spark.delta.logStore.s3a.impl={DYNAMODB_LOG_STORE}"


def test_spark_with_it_and_delta_rs_exclude_each_other_on_one_table() -> None:
    both = mixed_storage_safety(Table("s3a://lake/t"), DEFAULTS)
    assert both.safe and both.engine == "spark+delta-rs"
    dynamodb = {"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE}
    assert not mixed_storage_safety(Table("s3a://lake/t"), dynamodb).safe


def test_spark_submit_drivers_and_the_connect_server_get_it_unless_a_log_store_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import json

    from airflow_provider_deltacc.deployment.connect_server import server_command
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # no spark-defaults.conf
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_PIA_UNIT", json.dumps({"conn_type": "spark", "host": "yarn"}))
    runner = DeltaCCHook(conn_id="deltacc_pia_unit").submit_runner
    assert DEFAULTS.items() <= runner.submit_conf("yarn", {}).items()
    dynamo = {"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE}
    submitted = runner.submit_conf("yarn", {"spark_conf": dynamo})
    assert (
        "spark.delta.logStore.s3.impl" not in submitted and "spark.delta.logStore.s3a.impl" not in submitted
    )

    command = server_command(host="127.0.0.1", port=15002, master="local[1]")
    jars = command[command.index("--jars") + 1].split(",")
    assert str(put_if_absent.cached_log_store_jar()) in jars
    assert f"spark.delta.logStore.s3a.impl={PUT_IF_ABSENT_LOG_STORE}" in command
    (tmp_path / "spark-defaults.conf").write_text(f"spark.delta.logStore.s3a.impl {DYNAMODB_LOG_STORE}\n")
    command = server_command(host="127.0.0.1", port=15002, master="local[1]")
    assert not any(part.startswith("spark.delta.logStore.") for part in command)
