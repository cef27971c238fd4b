"""A quiet spark-submit without Spark: the small-job defaults a local master gets (sized to its cores, never
over a setting the user chose), the driver's log4j2 configuration and how it reaches the driver's JVM, and
``spark_log_level`` validation on the hook and the operators. The real path is tested in
``tests/integration/airflow_face/test_quiet_submit.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.spark_log import SUBMIT_OPTS_ENV, driver_log_env, log4j2_properties
from airflow_provider_deltacc.operators import DeltaAppendOperator
from airflow_provider_deltacc.spark_jars.delta_conf import (
    CORE_SIZED_SETTINGS,
    HANDLED_CONFLICT_LOGGERS,
    LOCAL_DEFAULTS,
    local_defaults,
    local_master_cores,
)

pytestmark = pytest.mark.unit

CONN_ID = "deltacc_quiet_unit"


def _connection(monkeypatch: pytest.MonkeyPatch, host: str, **extra: str) -> None:
    conn = {"conn_type": "spark", "host": host, "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))


@pytest.mark.parametrize(
    ("master", "cores"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[2,4]", 2),
        ("local[*]", len(os.sched_getaffinity(0))),
        ("local[*, 3]", len(os.sched_getaffinity(0))),
        ("local-cluster[2,1,1024]", None),
        ("spark://master:7077", None),
        ("yarn", None),
        ("k8s://https://k8s:443", None),
    ],
)
def test_local_master_cores(master: str, cores: int | None) -> None:
    assert local_master_cores(master) == cores


def test_local_defaults_are_sized_to_the_cores() -> None:
    assert local_defaults("local[2]") == LOCAL_DEFAULTS
    sized = local_defaults("local[3]")
    assert sized.keys() == LOCAL_DEFAULTS.keys()
    assert {key: sized[key] for key in CORE_SIZED_SETTINGS} == dict.fromkeys(CORE_SIZED_SETTINGS, "3")
    assert sized["spark.ui.enabled"] == "false"
    assert local_defaults("spark://master:7077") == {}


def test_submit_conf_defaults_only_what_no_spark_conf_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "local[4]")
    hook = DeltaCCHook(conn_id=CONN_ID, spark_conf={"spark.ui.enabled": "true", "spark.x": "1"})
    runner = hook.submit_runner
    spec = {"spark_conf": {**hook.spark_conf, "spark.sql.shuffle.partitions": "64"}}
    conf = runner.submit_conf(runner.connection_master, spec)
    assert conf["spark.ui.enabled"] == "true" and conf["spark.x"] == "1"
    assert "spark.sql.shuffle.partitions" not in conf  # the spec's own setting is applied by the job
    assert conf["spark.databricks.delta.snapshotPartitions"] == "4"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def test_cluster_masters_get_no_small_job_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "yarn")
    runner = DeltaCCHook(conn_id=CONN_ID).submit_runner
    conf = runner.submit_conf(runner.connection_master, {})
    assert not set(conf) & set(LOCAL_DEFAULTS)


def test_the_log4j2_configuration_sets_the_level_and_keeps_handled_conflicts_out() -> None:
    props = dict(line.split(" = ", 1) for line in log4j2_properties("INFO").splitlines() if " = " in line)
    assert props["rootLogger.level"] == "info"
    assert props["appender.console.target"] == "SYSTEM_ERR"
    levels = {
        props[key]: props[key.removesuffix(".name") + ".level"]
        for key in props
        if key.startswith("logger.") and key.endswith(".name")
    }
    assert all(levels[name] == "off" for name in HANDLED_CONFLICT_LOGGERS), levels


def test_the_driver_gets_the_configuration_before_the_options_already_set(tmp_path: Path) -> None:
    env = driver_log_env(tmp_path, "WARN", {SUBMIT_OPTS_ENV: "-Dlog4j2.configurationFile=file:/mine"})
    ours, theirs = env[SUBMIT_OPTS_ENV].split(" ")
    config = tmp_path / "log4j2-deltacc.properties"
    assert ours == f"-Dlog4j2.configurationFile={config.as_uri()}"
    assert theirs == "-Dlog4j2.configurationFile=file:/mine"  # later on the JVM's command line: it wins
    assert "rootLogger.level = warn\n" in config.read_text()
    assert driver_log_env(tmp_path, "WARN", {})[SUBMIT_OPTS_ENV] == ours


@pytest.mark.parametrize(
    ("options", "extra", "here"),
    [
        ({}, {}, True),
        ({"deploy_mode": "client"}, {"deploy-mode": "cluster"}, True),
        ({}, {"deploy-mode": "cluster"}, False),
        ({"deploy_mode": "cluster"}, {}, False),
    ],
)
def test_the_driver_log_is_configured_only_where_the_driver_runs_in_spark_submit(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], extra: dict[str, str], here: bool
) -> None:
    _connection(monkeypatch, "spark://master:7077", **extra)
    assert DeltaCCHook(conn_id=CONN_ID, submit_options=options).submit_runner.driver_runs_here is here


def test_spark_log_level_is_validated_by_the_hook() -> None:
    assert DeltaCCHook(spark_log_level=" info ").spark_log_level == "INFO"
    assert DeltaCCHook().spark_log_level == "WARN"
    with pytest.raises(DeltaCCInputError) as raised:
        DeltaCCHook(spark_log_level="LOUD")
    assert (raised.value.field, raised.value.value) == ("spark_log_level", "LOUD")
    assert "WARN" in str(raised.value) and "INFO" in str(raised.value)


def test_spark_log_level_is_templated_and_validated_by_the_operators(context: Any) -> None:
    append = DeltaAppendOperator(
        task_id="append", table="/data/t", source="/landing/a.parquet", spark_log_level="{{ params.level }}"
    )
    append.render_template_fields({**context, "params": {"level": "debug"}})
    append.validate_arguments()
    assert append.hook.spark_log_level == "DEBUG"

    loud = DeltaAppendOperator(task_id="loud", table="/data/t", source="/a.parquet", spark_log_level="LOUD")
    with pytest.raises(DeltaCCInputError) as raised:
        loud.validate_arguments()
    assert raised.value.field == "spark_log_level"
    assert str(raised.value).startswith("loud: spark_log_level='LOUD'")
