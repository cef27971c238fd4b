"""Exactly-once: the same identity twice writes once and reports the second run as a skipped duplicate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.txn import TxnIdentity
from airflow_provider_deltacc.engine.confs import isolated_session, session_confs
from airflow_provider_deltacc.engine.txn import TXN_CONFS, txn_confs
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import contents, create_table, history, rows_source, version

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def _twice(spark: SparkSession, spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    first_code, first = run_job(spec, spark)
    second_code, second = run_job(spec, spark)
    assert first_code == second_code == ExitCode.SUCCESS, (first, second)
    assert not any(key in spark.conf.getAll for key in TXN_CONFS), "txn confs leaked into the session"
    return first, second


def test_same_append_twice_writes_once(spark: SparkSession, table_path: str) -> None:
    spec = {
        "operation": "append",
        "table": table_path,
        "source": rows_source([[1, "2026-11-20", "a"]]),
        "options": {"partition_by": ["date"]},
        "txn": {"app_id": "dag.append", "version": 7},
    }
    first, second = _twice(spark, spec)
    assert first["status"] == "committed" and first["skipped_duplicate"] is False
    assert second["status"] == "skipped_duplicate" and second["skipped_duplicate"] is True
    assert second["table_version"] == first["table_version"] == version(spark, table_path)
    assert second["metrics"]["recorded_txn_version"] == 7
    assert contents(spark, table_path) == [("1", "2026-11-20", "a")]
    newer = run_job({**spec, "txn": {"app_id": "dag.append", "version": 8}}, spark)[1]
    assert newer["status"] == "committed"
    assert len(contents(spark, table_path)) == 2


def test_same_merge_twice_applies_once(spark: SparkSession, table_path: str) -> None:
    create_table(spark, table_path, [(1, "2026-11-20", "a")])
    spec = {
        "operation": "merge",
        "table": table_path,
        "source": rows_source([[1, "2026-11-20", "b"], [2, "2026-11-20", "c"]]),
        "options": {
            "keys": ["id"],
            "when_matched": [{"action": "update", "set": {"value": "concat(t.value, s.value)"}}],
        },
        "txn": {"app_id": "dag.merge", "version": 3},
    }
    first, second = _twice(spark, spec)
    assert first["status"] == "committed" and second["skipped_duplicate"] is True
    assert contents(spark, table_path) == [("1", "2026-11-20", "ab"), ("2", "2026-11-20", "c")]
    operations = [operation for _, operation in history(spark, table_path)]
    assert operations.count("MERGE") == 1


@pytest.mark.classic_session  # a child session is a classic-session thing; Connect sessions have none
def test_txn_confs_are_removed_even_on_error(spark: SparkSession) -> None:
    session = isolated_session(spark, {})
    with pytest.raises(RuntimeError), session_confs(session, txn_confs(TxnIdentity("app", 1))):
        assert session.conf.get("spark.databricks.delta.write.txnAppId") == "app"
        raise RuntimeError("boom")
    assert not any(key in session.conf.getAll for key in TXN_CONFS)


@pytest.mark.classic_session
def test_a_session_made_from_an_earlier_operations_session_gets_every_setting(spark: SparkSession) -> None:
    # pyspark makes each new session the thread's active one, so the next in-process job starts from the
    # last operation's session; a new session takes none of its parent's runtime settings.
    conf = {"spark.sql.shuffle.partitions": "7", "fs.s3a.endpoint.region": "eu-west-3"}
    first = isolated_session(spark, conf)
    second = isolated_session(first, conf)
    assert [second.conf.get(key) for key in conf] == ["7", "eu-west-3"]
