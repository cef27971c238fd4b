"""The S3 log store set in the ``spark-defaults.conf`` spark-submit reads on the worker counts: writers on
such a table are not serialized. ``spark_conf`` still wins over it, and a Spark Connect task, whose server's
defaults are elsewhere, only has ``spark_conf``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.spark_jars.put_if_absent import SWITCH_CONF
from airflow_provider_deltacc.spark_jars.spark_defaults import parse_spark_defaults, spark_defaults_file

pytestmark = pytest.mark.unit

LOG_STORE = "spark.delta.logStore.s3a.impl"
DYNAMO = "io.delta.storage.S3DynamoDBLogStore"


def _merge(**kwargs: object) -> DeltaMergeOperator:
    return DeltaMergeOperator(
        task_id="merge", table="s3a://lake/orders", source="s3a://landing/a.parquet", keys=["id"], **kwargs
    )


@pytest.fixture
def conf_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "spark-conf"
    directory.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(directory))
    monkeypatch.delenv("DELTACC_ALLOW_UNSAFE_CONCURRENT_WRITES", raising=False)
    return directory


def test_parse_spark_defaults() -> None:
    text = f"""
# a comment
! another
{LOG_STORE}   {DYNAMO}
spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName=delta_log
spark.executor.memory : 2g
spark.empty
"""
    assert parse_spark_defaults(text) == {
        LOG_STORE: DYNAMO,
        "spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName": "delta_log",
        "spark.executor.memory": "2g",
    }


def test_the_log_store_in_spark_defaults_makes_s3_safe_for_concurrent_writers(conf_dir: Path) -> None:
    # The put-if-absent log store turned off there: Delta's single-driver S3 log store is left.
    (conf_dir / "spark-defaults.conf").write_text(f"{SWITCH_CONF} false\n")
    operator = _merge(execution_mode="spark_submit")
    assert not operator.storage_safety().safe
    spec = parse_spec(
        {
            "operation": "merge",
            "table": "s3a://lake/orders",
            "source": {"kind": "table", "name": "db.staging"},
            "options": {"keys": ["id"]},
        }
    )
    assert operator.guard_storage(spec) == (replace(spec, storage_guard="exclusive_lease"), True)

    (conf_dir / "spark-defaults.conf").write_text(f"{LOG_STORE} {DYNAMO}\n")
    assert spark_defaults_file() == conf_dir / "spark-defaults.conf"
    assert _merge(execution_mode="spark_submit").storage_safety().safe
    assert _merge(execution_mode="in_process").storage_safety().safe
    assert _merge(execution_mode="spark_submit").guard_storage(spec) == (spec, False)  # not serialized


def test_spark_conf_wins_over_spark_defaults(conf_dir: Path) -> None:
    (conf_dir / "spark-defaults.conf").write_text(f"{LOG_STORE} {DYNAMO}\n")
    single = {LOG_STORE: "io.delta.storage.S3SingleDriverLogStore"}
    assert not _merge(execution_mode="spark_submit", spark_conf=single).storage_safety().safe


def test_a_spark_connect_task_does_not_read_the_workers_spark_defaults(conf_dir: Path) -> None:
    (conf_dir / "spark-defaults.conf").write_text(f"{LOG_STORE} {DYNAMO}\n")
    assert not _merge(execution_mode="spark_connect").storage_safety().safe
    assert _merge(execution_mode="spark_connect", spark_conf={LOG_STORE: DYNAMO}).storage_safety().safe


def test_spark_home_conf_is_read_when_no_conf_dir_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text(f"{LOG_STORE}={DYNAMO}\n")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert spark_defaults_file() == tmp_path / "conf" / "spark-defaults.conf"
    assert _merge(execution_mode="spark_submit").storage_safety().safe
