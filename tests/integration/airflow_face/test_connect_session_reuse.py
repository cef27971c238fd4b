"""Warm Spark Connect sessions kept between tasks, on the test run's real Connect server: a run takes over the
session an earlier run ended cleanly with nothing of that run left in it, two runs at once never share one, a
kept session the server dropped is replaced, and ``"session_reuse": false`` opens a session per run. Each
test has a pool directory of its own, so other tests on the same server never take its sessions."""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.source_function import SourceFunction
from airflow_provider_deltacc.deployment.environment import CONNECT_SESSION_POOL_ENV
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from tests.support.spark_connect import ConnectServer

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(1)]

CONN_ID = "deltacc_test_reuse"
SCHEMA = "id INT, day STRING"
OPENED = re.compile(
    r"Spark Connect session ([0-9a-f-]{36}) on \S+ for \S+( \(kept warm by an earlier task\))?"
)


@pytest.fixture
def connect_conn(spark_connect_server: ConnectServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", spark_connect_server.conn_uri)
    monkeypatch.setenv(CONNECT_SESSION_POOL_ENV, str(tmp_path / "pool"))
    return CONN_ID


def _opened(caplog: pytest.LogCaptureFixture) -> list[tuple[str, bool]]:
    return [(session, bool(kept)) for session, kept in OPENED.findall(caplog.text)]


def _append(table: str, function: Any, app_id: str) -> dict[str, Any]:
    return {
        "operation": "append",
        "table": table,
        "source": {"kind": "callable", "function": SourceFunction(function)},
        "txn": {"app_id": app_id, "version": 1},
    }


def _operations(table: str) -> list[str]:
    from deltalake import DeltaTable

    return [str(h["operation"]) for h in DeltaTable(table).history()]


def _leave_state_behind(spark: SparkSession) -> DataFrame:
    """What a task's own code may leave in its session: a setting, the current database, a temporary view
    and a temporary function."""
    spark.conf.set("deltacc.test.leftover", "from the first task")
    spark.sql("CREATE DATABASE IF NOT EXISTS deltacc_reuse_elsewhere")
    spark.sql("USE deltacc_reuse_elsewhere")
    spark.range(1).createOrReplaceTempView("leftover_view")
    spark.udf.register("leftover_fn", lambda x: x, "int")
    return spark.createDataFrame([(1, "2026-11-20")], SCHEMA)


def test_a_run_takes_over_the_session_an_earlier_run_kept_with_nothing_of_that_run_in_it(
    connect_conn: str, spark_connect_server: ConnectServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_deltacc")
    fresh = spark_connect_server.session()
    try:  # what a new session has: Delta's extension registers table functions of its own
        new_session_functions = sorted(str(r[0]) for r in fresh.sql("SHOW USER FUNCTIONS").collect())
    finally:
        fresh.stop()
    assert "table_changes" in new_session_functions
    seen: dict[str, Any] = {}

    def look_around(spark: SparkSession) -> DataFrame:
        seen["setting"] = spark.conf.get("deltacc.test.leftover", None)
        seen["txn_app_id"] = spark.conf.get("spark.databricks.delta.write.txnAppId", None)
        seen["database"] = spark.catalog.currentDatabase()
        seen["view"] = spark.catalog.tableExists("leftover_view")
        seen["function"] = spark.catalog.functionExists("leftover_fn")
        seen["functions"] = sorted(str(r[0]) for r in spark.sql("SHOW USER FUNCTIONS").collect())
        return spark.createDataFrame([(2, "2026-11-21")], SCHEMA)

    hook = DeltaCCHook(conn_id=connect_conn, execution_mode="spark_connect")
    first_table, second_table = str(tmp_path / "first"), str(tmp_path / "second")
    first = hook.run(_append(first_table, _leave_state_behind, "reuse.first"))
    second = hook.run(_append(second_table, look_around, "reuse.second"))

    assert first["status"] == "committed" and second["status"] == "committed", (first, second)
    opened = _opened(caplog)
    assert [kept for _, kept in opened] == [False, True], opened
    assert opened[0][0] == opened[1][0], opened
    assert seen == {
        "setting": None,
        "txn_app_id": None,
        "database": "default",
        "view": False,
        "function": False,
        "functions": new_session_functions,
    }
    # The second run's commit is found as its own, not as the first run's (Delta's note of the session's
    # last commit went with the reset), and its txn identity is recorded once.
    assert second["table_version"] == 0 and second["txn_app_id"] == "reuse.second", second
    assert _operations(second_table) == ["WRITE"]
    again = hook.run(_append(second_table, look_around, "reuse.second"))
    assert again["status"] == "skipped_duplicate", again
    assert _operations(second_table) == ["WRITE"]


def test_runs_at_the_same_time_never_share_a_session(
    connect_conn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_deltacc")
    hook = DeltaCCHook(conn_id=connect_conn, execution_mode="spark_connect")
    warm = [hook.run(_append(str(tmp_path / f"warm{i}"), _rows(i), f"warm.{i}")) for i in range(2)]
    assert all(r["status"] == "committed" for r in warm)
    kept = {session for session, _ in _opened(caplog)}
    assert len(kept) == 1, kept  # one after the other: the second took over the first's session
    caplog.clear()

    both_inside = threading.Barrier(2, timeout=120)

    def meet(index: int) -> Any:
        def source(spark: SparkSession) -> DataFrame:
            both_inside.wait()  # each run holds its session until the other holds one too
            return spark.createDataFrame([(index, "2026-11-22")], SCHEMA)

        return source

    reports: list[dict[str, Any]] = []
    threads = [
        threading.Thread(
            target=lambda i=i: reports.append(
                DeltaCCHook(conn_id=connect_conn, execution_mode="spark_connect").run(
                    _append(str(tmp_path / f"together{i}"), meet(i), f"together.{i}")
                )
            )
        )
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert [r["status"] for r in reports] == ["committed", "committed"], reports
    opened = _opened(caplog)
    assert len(opened) == 2 and opened[0][0] != opened[1][0], opened
    assert sorted(kept for _, kept in opened) == [False, True], opened  # one took the kept session


def _rows(index: int) -> Any:
    def source(spark: SparkSession) -> DataFrame:
        return spark.createDataFrame([(index, "2026-11-22")], SCHEMA)

    return source


def test_a_kept_session_the_server_dropped_is_replaced_by_a_new_one(
    connect_conn: str, spark_connect_server: ConnectServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_deltacc")
    hook = DeltaCCHook(conn_id=connect_conn, execution_mode="spark_connect")
    assert hook.run(_append(str(tmp_path / "a"), _rows(1), "dropped.a"))["status"] == "committed"
    ((kept, _),) = _opened(caplog)
    from airflow_provider_deltacc.hooks.connect import new_connect_session

    new_connect_session(
        spark_connect_server.url, session_id=kept
    ).stop()  # released on the server: the id is closed for good

    report = hook.run(_append(str(tmp_path / "b"), _rows(2), "dropped.b"))
    assert report["status"] == "committed", report
    opened = _opened(caplog)
    assert opened[1][0] != kept and opened[1][1] is False, opened
    assert f"kept Spark Connect session {kept} no longer answers" in caplog.text


def test_session_reuse_false_opens_a_session_for_every_run(
    spark_connect_server: ConnectServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_deltacc")
    host, port = spark_connect_server.conn_uri.removeprefix("spark-connect://").rsplit(":", 1)
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_NO_REUSE",
        json.dumps(
            {"conn_type": "spark_connect", "host": host, "port": int(port), "extra": {"session_reuse": False}}
        ),
    )
    monkeypatch.setenv(CONNECT_SESSION_POOL_ENV, str(tmp_path / "pool"))
    hook = DeltaCCHook(conn_id="deltacc_no_reuse", execution_mode="spark_connect")
    for i in range(2):
        assert hook.run(_append(str(tmp_path / f"t{i}"), _rows(i), f"no.reuse.{i}"))["status"] == "committed"
    opened = _opened(caplog)
    assert len(opened) == 2 and opened[0][0] != opened[1][0] and not any(k for _, k in opened), opened
    assert not (tmp_path / "pool").exists()
