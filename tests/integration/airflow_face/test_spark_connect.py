"""``execution_mode="spark_connect"`` end to end: the hook as a thin client of the test run's Spark Connect
server (Delta jars and Delta's SQL extension, started once per run), every operation, a session per run,
real conflicts raised over Connect, racing writers, exactly-once, ``on_kill``, and what a broken connection
looks like. delta-rs is the independent reader."""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.exceptions import (
    DeltaCCInfrastructureError,
    DeltaCCInputError,
    DeltaConflictRetryable,
)
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.occ.classifier import classify
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.spark_job.main import run_job
from tests.support.airflow_runs import serialize_dag, try_history, xcom_value
from tests.support.gate import Gate

if TYPE_CHECKING:
    from tests.support.spark_connect import ConnectServer, ConnectServerProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(3)]

CONN_ID = "deltacc_test_connect"
SCHEMA = "id INT, date DATE, value STRING"
SESSION_LINE = re.compile(r"Spark Connect session ([0-9a-f-]{36}) on ")


@pytest.fixture
def connect_conn(spark_connect_server: ConnectServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", spark_connect_server.conn_uri)
    return CONN_ID


def _hook(conn_id: str, **kwargs: Any) -> DeltaCCHook:
    return DeltaCCHook(conn_id=conn_id, execution_mode="spark_connect", **kwargs)


def _rows(rows: list[list[Any]]) -> dict[str, Any]:
    return {"kind": "rows", "rows": rows, "schema": SCHEMA}


def _history(table: str) -> list[tuple[int, str]]:
    from deltalake import DeltaTable

    return sorted((int(h["version"]), str(h["operation"])) for h in DeltaTable(table).history())


def _contents(table: str) -> list[tuple[Any, ...]]:
    from deltalake import DeltaTable

    rows = DeltaTable(table).to_pyarrow_table().to_pylist()
    return sorted((r["id"], str(r["date"]), r["value"]) for r in rows)


def test_every_operation_runs_through_the_hook(
    connect_conn: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_deltacc")
    table = str(tmp_path / "orders")
    hook = _hook(connect_conn)
    created = hook.run(
        {
            "operation": "append",
            "table": table,
            "source": _rows([[1, "2026-11-20", "a"], [2, "2026-11-21", "b"]]),
            "options": {"partition_by": ["date"]},
            "txn": {"app_id": "orders.create", "version": 1},
        }
    )
    assert created["status"] == "committed" and created["metrics"]["created_table"] is True
    merged = hook.run(
        {
            "operation": "merge",
            "table": table,
            "source": _rows([[1, "2026-11-20", "a2"], [3, "2026-11-20", "c"]]),
            "options": {"keys": ["id", "date"]},
            "txn": {"app_id": "orders.merge", "version": 1},
        }
    )
    assert merged["status"] == "committed"
    assert merged["metrics"]["partition_pin"] == "(`t`.`date` IN (DATE '2026-11-20'))"
    updated = hook.run(
        {
            "operation": "update",
            "table": table,
            "options": {"set_values": {"value": "b2"}, "equals": {"id": 2}},
            "txn": {"app_id": "orders.update", "version": 1},
        }
    )
    deleted = hook.run(
        {
            "operation": "delete",
            "table": table,
            "options": {"condition": "id = 3"},
            "txn": {"app_id": "orders.delete", "version": 1},
        }
    )
    # a second file in partition 2026-11-21, so OPTIMIZE has something to compact
    hook.run({"operation": "append", "table": table, "source": _rows([[4, "2026-11-21", "d"]])})
    optimized = hook.run({"operation": "optimize", "table": table})
    vacuumed = hook.run({"operation": "vacuum", "table": table, "options": {"dry_run": True}})
    counted = hook.run(
        {"operation": "sql", "table": table, "options": {"statement": "SELECT count(*) AS n FROM {table}"}}
    )
    assert [r["status"] for r in (updated, deleted, optimized, vacuumed)] == ["committed"] * 4
    assert optimized["metrics"]["num_files_removed"] == 2 and "noop" not in optimized["metrics"]
    assert counted["metrics"]["result"] == {"n": 3}
    assert _contents(table) == [(1, "2026-11-20", "a2"), (2, "2026-11-21", "b2"), (4, "2026-11-21", "d")]
    operations = [op for _, op in _history(table)]
    assert operations == ["WRITE", "MERGE", "UPDATE", "DELETE", "WRITE", "OPTIMIZE"], operations
    # A session per run, new or kept warm by an earlier run (test_connect_session_reuse.py).
    assert len(SESSION_LINE.findall(caplog.text)) == 8, caplog.text


def test_spark_conf_applies_to_its_own_run_only(connect_conn: str, tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    _hook(connect_conn).run(
        {"operation": "append", "table": table, "source": _rows([[1, "2026-11-20", "a"]])}
    )
    show = {"operation": "sql", "table": table, "options": {"statement": "SET spark.sql.shuffle.partitions"}}
    tuned = _hook(connect_conn, spark_conf={"spark.sql.shuffle.partitions": "7"}).run(show)
    plain = _hook(connect_conn).run(show)
    assert tuned["metrics"]["result"]["value"] == "7"
    assert plain["metrics"]["result"]["value"] != "7"


def test_a_conflict_raised_over_connect_is_classified_and_retried(
    spark_connect_server: ConnectServer, tmp_path: Path
) -> None:
    """The MERGE reads its snapshot and is held at the gate while a blind append commits into the partition
    it reads: Delta fails it with ConcurrentAppendException, which reaches the client as a Spark Connect
    exception. The commit loop classifies it, re-plans from a fresh snapshot and commits."""
    table = str(tmp_path / "orders")
    setup = spark_connect_server.session()
    rival = spark_connect_server.session()
    loser = spark_connect_server.session()
    try:
        frame = setup.createDataFrame([(1, "2026-11-20", "a")], "id INT, date STRING, value STRING")
        frame.withColumn("date", frame["date"].cast("date")).write.format("delta").partitionBy("date").save(
            table
        )
        gate = Gate(tmp_path)
        outcome: dict[str, Any] = {}

        def held_merge() -> None:
            spec = {
                "operation": "merge",
                "table": table,
                "source": _rows([[1, "2026-11-20", "b"]]),
                "options": {"keys": ["id"], "partition_pin": None},
                "commit_retry": {"max_attempts": 3, "min_wait_s": 0.05, "max_wait_s": 0.2},
            }
            outcome["result"] = run_job(
                spec, loser, source_hook=lambda f, attempt: gate.hold(f, "id") if attempt == 1 else f
            )

        thread = threading.Thread(target=held_merge)
        thread.start()
        try:
            gate.wait_entered()
            blind = rival.createDataFrame([(9, "2026-11-20", "z")], "id INT, date STRING, value STRING")
            blind.withColumn("date", blind["date"].cast("date")).write.format("delta").mode("append").save(
                table
            )
        finally:
            gate.release()
            thread.join(timeout=300)
        code, report = outcome["result"]
    finally:
        for session in (setup, rival, loser):
            session.stop()
    assert code == ExitCode.SUCCESS, report
    first, second = report["attempts"]
    assert first["outcome"] == "conflict" and first["conflict"]["kind"] == "append", first
    assert second["outcome"] == "committed"
    assert _contents(table) == [(1, "2026-11-20", "b"), (9, "2026-11-20", "z")]


def test_connect_exceptions_are_classified_by_the_same_classifier(
    spark_connect_server: ConnectServer, tmp_path: Path
) -> None:
    """A raw Delta conflict over Connect, no commit loop: a MERGE held after reading its snapshot while a
    blind append commits into its partition. The exception pyspark raises carries Delta's error class, and the
    classifier names the kind."""
    table = str(tmp_path / "t")
    first, second = spark_connect_server.session(), spark_connect_server.session()
    try:
        first.createDataFrame([(1, "a")], "id INT, p STRING").write.format("delta").partitionBy("p").save(
            table
        )
        gate = Gate(tmp_path)
        errors: list[BaseException] = []

        def merge_held() -> None:
            try:
                source = gate.hold(second.createDataFrame([(1, "a")], "id INT, p STRING"), "id")
                source.createOrReplaceTempView("updates")
                second.sql(
                    f"MERGE INTO delta.`{table}` AS t USING updates AS s ON t.id = s.id "
                    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
                )
            except BaseException as exc:  # inspected below
                errors.append(exc)

        thread = threading.Thread(target=merge_held)
        thread.start()
        try:
            gate.wait_entered()
            first.createDataFrame([(2, "a")], "id INT, p STRING").write.format("delta").mode("append").save(
                table
            )
        finally:
            gate.release()
            thread.join(timeout=300)
    finally:
        first.stop()
        second.stop()
    assert len(errors) == 1, errors
    error = errors[0]
    assert type(error).__module__.startswith("pyspark.errors.exceptions.connect"), type(error)
    conflict = classify(error)
    assert conflict is not None and conflict.kind is ConflictKind.APPEND, (type(error), str(error)[:500])


def test_racing_unpinned_merges_through_the_hook_each_commit_once(connect_conn: str, tmp_path: Path) -> None:
    table = str(tmp_path / "orders")
    _hook(connect_conn).run(
        {
            "operation": "append",
            "table": table,
            "source": _rows([[i, "2026-11-20", "seed"] for i in range(4)]),
            "options": {"partition_by": ["date"]},
        }
    )
    reports: dict[int, dict[str, Any]] = {}
    errors: dict[int, BaseException] = {}

    def writer(index: int) -> None:
        spec = {
            "operation": "merge",
            "table": table,
            "source": _rows([[index, "2026-11-20", f"w{index}"], [100 + index, "2026-11-20", "new"]]),
            "options": {"keys": ["id"], "partition_pin": None},
            "txn": {"app_id": f"racer.{index}", "version": 1},
            "commit_retry": {"max_attempts": 12, "min_wait_s": 0.05, "max_wait_s": 0.5},
        }
        try:
            reports[index] = _hook(connect_conn).run(spec)
        except BaseException as exc:  # reported by the assertion below
            errors[index] = exc

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    assert all(reports[i]["status"] == "committed" for i in range(4)), reports
    expected = sorted(
        [(i, "2026-11-20", f"w{i}") for i in range(4)] + [(100 + i, "2026-11-20", "new") for i in range(4)]
    )
    assert _contents(table) == expected
    assert [op for _, op in _history(table)].count("MERGE") == 4
    again = _hook(connect_conn).run(
        {
            "operation": "merge",
            "table": table,
            "source": _rows([[0, "2026-11-20", "again"]]),
            "options": {"keys": ["id"], "partition_pin": None},
            "txn": {"app_id": "racer.0", "version": 1},
        }
    )
    assert again["status"] == "skipped_duplicate" and again["skipped_duplicate"] is True
    assert _contents(table) == expected


def test_on_kill_interrupts_the_running_operation(connect_conn: str, tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    _hook(connect_conn).run(
        {"operation": "append", "table": table, "source": _rows([[1, "2026-11-20", "a"]])}
    )
    hook = _hook(connect_conn)
    slow = "SELECT reflect('java.lang.Thread', 'sleep', CAST(120000 AS BIGINT)) AS slept FROM {table}"
    outcome: list[BaseException | dict[str, Any]] = []

    def run() -> None:
        try:
            outcome.append(hook.run({"operation": "sql", "table": table, "options": {"statement": slow}}))
        except BaseException as exc:  # inspected below
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while getattr(hook.runner, "_session", None) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # interruptAll() cancels only operations already running on the server, and nothing says when the
    # statement starts: kill again until the run ends. The statement sleeps 120 s, so ending well before
    # that proves the interrupt, timed from the first kill.
    killed_at = time.monotonic()
    while thread.is_alive() and time.monotonic() - killed_at < 90:
        hook.on_kill()
        thread.join(timeout=0.5)
    assert not thread.is_alive(), "on_kill did not stop the running statement"
    assert time.monotonic() - killed_at < 90
    assert len(outcome) == 1 and isinstance(outcome[0], AirflowException), outcome
    assert "OPERATION_CANCELED" in str(outcome[0])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_server_is_an_infrastructure_failure_naming_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _free_port()
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_DOWN", f"spark-connect://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        _hook("deltacc_down").run({"operation": "optimize", "table": str(tmp_path / "t")})
    assert time.monotonic() - started < 10
    message = str(raised.value)
    assert "conn_id='deltacc_down'" in message and f"127.0.0.1:{port}" in message
    assert raised.value.unreachable == f"Spark Connect server 127.0.0.1:{port} (conn_id='deltacc_down')"


def test_an_unanswering_server_times_out_as_an_infrastructure_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listening socket that never accepts (its backlog is full) stands for a host that does not answer."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(0)
        port = silent.getsockname()[1]
        fillers = []
        for _ in range(8):  # fill the accept backlog so further connects hang
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        monkeypatch.setenv("AIRFLOW_CONN_DELTACC_SILENT", f"spark-connect://127.0.0.1:{port}")
        runner = _hook("deltacc_silent").runner
        started = time.monotonic()
        try:
            with pytest.raises(DeltaCCInfrastructureError, match=f"127.0.0.1:{port}"):
                runner.check_reachable(timeout_s=1.0)  # type: ignore[attr-defined]
        finally:
            for filler in fillers:
                filler.close()
        assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    ("conn", "message"),
    [
        (None, "no such Airflow connection"),
        ("spark://localhost:7077", "is a 'spark' connection; execution_mode='spark_connect' needs"),
        (json.dumps({"conn_type": "spark_connect", "host": "sc://h:15002/some/path"}), "cannot build"),
    ],
    ids=["missing", "wrong type", "path in the URL"],
)
def test_connection_mistakes_are_bad_input_naming_conn_id(
    conn: str | None, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if conn is not None:
        monkeypatch.setenv("AIRFLOW_CONN_DELTACC_BAD", conn)
    else:
        monkeypatch.delenv("AIRFLOW_CONN_DELTACC_BAD", raising=False)
    with pytest.raises(DeltaCCInputError) as raised:
        _hook("deltacc_bad").run({"operation": "optimize", "table": str(tmp_path / "t")})
    assert raised.value.field == "conn_id" and raised.value.value == "deltacc_bad"
    assert message in str(raised.value)
    assert not isinstance(raised.value, DeltaConflictRetryable)


def test_a_connect_task_starts_no_jvm_in_the_worker(connect_conn: str, tmp_path: Path) -> None:
    """The whole run in a fresh process, as a task runs: no Spark JVM gateway is launched there, and no
    classic SparkContext exists; Delta runs on the server only."""
    import os
    import subprocess
    import sys

    table = str(tmp_path / "t")
    script = f"""
import json
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
hook = DeltaCCHook(conn_id={connect_conn!r}, execution_mode="spark_connect")
spec = {{"operation": "append", "table": {table!r},
        "source": {{"kind": "rows", "rows": [[1, "2026-11-20", "a"]], "schema": {SCHEMA!r}}}}}
report = hook.run(spec)
from pyspark import SparkContext
print(json.dumps({{"status": report["status"], "gateway": SparkContext._gateway is not None,
                  "context": SparkContext._active_spark_context is not None}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy(), timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "status": "committed",
        "gateway": False,
        "context": False,
    }
    assert _contents(table) == [(1, "2026-11-20", "a")]


def test_a_connection_with_a_databricks_cluster_header_reaches_the_server(
    spark_connect_server: ConnectServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The header a Databricks endpoint routes by travels on every request; this server ignores it. (A token
    needs TLS, which this server does not speak: the URL with one is checked in tests/unit.)"""
    host_port = spark_connect_server.conn_uri.removeprefix("spark-connect://")
    host, port = host_port.rsplit(":", 1)
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_CLUSTER_HEADER",
        json.dumps(
            {
                "conn_type": "spark_connect",
                "host": host,
                "port": int(port),
                "extra": {"x-databricks-cluster-id": "0123-456789-abc"},
            }
        ),
    )
    hook = _hook("deltacc_cluster_header")
    assert hook.runner.url.endswith("/;x-databricks-cluster-id=0123-456789-abc")  # type: ignore[attr-defined]
    table = str(tmp_path / "t")
    report = hook.run({"operation": "append", "table": table, "source": _rows([[1, "2026-11-26", "x"]])})
    assert report["status"] == "committed" and report["table_version"] == 0


# --- A Connect server that dies under a running task -------------------------------------------------------
# The module's own server (local[1]): the tests below SIGKILL it and start it again on its port, as a
# supervisor would; the run's shared server is never touched.

KILLED_CONN_ID = "deltacc_killed_connect"
MERGE_TASK = "merge"


@pytest.fixture(scope="module")
def killable_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServerProcess]:
    from tests.support.spark_connect import ConnectServerProcess

    server = ConnectServerProcess(tmp_path_factory.mktemp("killable-connect"), master="local[1]")
    server.start()
    try:
        yield server
    finally:
        server.stop()


class _Restart:
    """Kill the server when the held job reached its hold (``held``: a gate, or an event), let the job go,
    and start the server again on its port, in a thread, as a supervisor would. ``wait()`` (the task's retry
    callback) returns once it serves."""

    def __init__(self, server: ConnectServerProcess, held: Gate | _AnswerHold) -> None:
        self.server, self.held = server, held
        self.killed_at: float | None = None
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="connect-supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self.held.wait_entered()
            self.killed_at = self.server.kill()
            self.held.release()  # the job goes on against a dead server
            self.server.start()
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)
        finally:
            self.held.release()

    def wait(self, context: Any = None) -> None:
        self._thread.join(timeout=300)
        assert not self._thread.is_alive(), "the Connect server did not start again"


class _AnswerHold:
    """Hold the job right after its MERGE committed, before it learns which version it committed (the first
    read of its commit): the answer the server would give is held, and the server dies meanwhile."""

    def __init__(self, timeout_s: float = 180) -> None:
        self.entered, self.released, self.timeout_s = threading.Event(), threading.Event(), timeout_s
        self.version_at_hold: int | None = None

    def install(self, monkeypatch: pytest.MonkeyPatch, table: str) -> None:
        from airflow_provider_deltacc.engine.backend_connect import ConnectBackend

        tagged_commits = ConnectBackend.tagged_commits

        def held(backend: ConnectBackend, *args: Any, **kwargs: Any) -> Any:
            if not self.entered.is_set():
                from deltalake import DeltaTable

                self.version_at_hold = DeltaTable(table).version()  # the commit landed: read without Spark
                self.entered.set()
                assert self.released.wait(self.timeout_s), "the answer hold was never released"
            return tagged_commits(backend, *args, **kwargs)

        monkeypatch.setattr(ConnectBackend, "tagged_commits", held)

    def wait_entered(self) -> None:
        if not self.entered.wait(self.timeout_s):
            raise TimeoutError("the MERGE never reached the answer hold")

    def release(self) -> None:
        self.released.set()


def _merge_dag(dag_id: str, table: str, tmp_path: Path, **kwargs: Any) -> Any:
    from airflow.sdk import DAG

    from airflow_provider_deltacc.operators import DeltaMergeOperator

    with DAG(dag_id, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaMergeOperator(
            task_id=MERGE_TASK,
            table=table,
            source=_rows([[1, "2026-11-20", "merged"]]),
            keys=["id"],
            execution_mode="spark_connect",
            conn_id=KILLED_CONN_ID,
            retries=1,
            retry_delay=timedelta(seconds=1),
            **kwargs,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    return dag


def _seed(table: str) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    rows = {"id": pa.array([1], pa.int32()), "date": pa.array([date(2026, 11, 20)]), "value": ["seed"]}
    write_deltalake(table, pa.table(rows))


def test_a_connect_server_killed_mid_merge_fails_the_try_as_infrastructure_and_the_retry_commits_once(
    airflow_db: Path,
    killable_connect_server: ConnectServerProcess,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MERGE's first attempt reads its snapshot and waits at a gate; the server is SIGKILLed there and
    started again on its port. The try fails as infrastructure naming the connection and the server; the retry
    (after the server serves again) commits once."""
    from deltalake import DeltaTable

    import airflow_provider_deltacc.spark_job.main as job_main

    server = killable_connect_server.server
    monkeypatch.setenv(f"AIRFLOW_CONN_{KILLED_CONN_ID.upper()}", server.conn_uri)
    table = str(tmp_path / "balances")
    _seed(table)
    gate = Gate(tmp_path, timeout_s=180)
    restart = _Restart(killable_connect_server, gate)
    run_job, calls = job_main.run_job, []

    def held_first_try(
        spec: Any, spark: Any = None, *, source_hook: Any = None, turns: Any = None, **kwargs: Any
    ) -> Any:
        calls.append(spec)
        hold = (
            (lambda frame, attempt: gate.hold(frame, "id") if attempt == 1 else frame)
            if len(calls) == 1
            else None
        )
        return run_job(spec, spark, source_hook=hold, turns=turns, **kwargs)

    monkeypatch.setattr(job_main, "run_job", held_first_try)
    dag = _merge_dag("deltacc_test_connect_killed_mid_merge", table, tmp_path, on_retry_callback=restart.wait)
    restart.start()
    dr = dag.test()
    restart.wait()
    assert not restart.errors, restart.errors
    assert restart.killed_at is not None, "the Connect server was not killed while the MERGE was held"

    [ti] = dr.get_task_instances()
    [first] = try_history(dr)[MERGE_TASK]
    reason = first.retry_reason or ""
    print(f"first try's reason: {reason}")
    assert (str(ti.state), ti.try_number) == ("success", 2), reason
    expected = (
        f"Spark Connect server {server.host}:{server.port} (conn_id='{KILLED_CONN_ID}') unreachable: "
        "Airflow try 2 of 2 starts after the task's retry delay."
    )
    assert reason.startswith(expected), reason
    assert "txn identity keeps it from writing twice" in reason, reason
    assert first.retry_delay_override is None
    report = xcom_value(dr, MERGE_TASK, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 1), report
    history = DeltaTable(table).history()
    assert [h["operation"] for h in history].count("MERGE") == 1
    assert _contents(table) == [(1, "2026-11-20", "merged")]
    kill_to_commit = history[0]["timestamp"] / 1000 - restart.killed_at
    print(f"Connect server killed mid-MERGE: {kill_to_commit:.1f} s from the kill to the retry's commit")


def test_a_connect_server_killed_after_the_commit_landed_leaves_the_retry_nothing_to_write(
    airflow_db: Path,
    killable_connect_server: ConnectServerProcess,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MERGE commits; the job is held before it learns its commit, and the server is SIGKILLed there and
    started again. The try fails as infrastructure; the retry finds the commit by its txn identity in the
    Delta log and writes nothing."""
    from deltalake import DeltaTable

    server = killable_connect_server.server
    monkeypatch.setenv(f"AIRFLOW_CONN_{KILLED_CONN_ID.upper()}", server.conn_uri)
    table = str(tmp_path / "balances")
    _seed(table)
    hold = _AnswerHold()
    hold.install(monkeypatch, table)
    restart = _Restart(killable_connect_server, hold)
    dag = _merge_dag(
        "deltacc_test_connect_killed_after_commit", table, tmp_path, on_retry_callback=restart.wait
    )
    restart.start()
    dr = dag.test()
    restart.wait()
    assert not restart.errors, restart.errors
    assert restart.killed_at is not None, "the Connect server was not killed after the commit"
    assert hold.version_at_hold == 1, "the MERGE had not committed when the server was killed"

    [ti] = dr.get_task_instances()
    [first] = try_history(dr)[MERGE_TASK]
    reason = first.retry_reason or ""
    print(f"first try's reason: {reason}")
    assert (str(ti.state), ti.try_number) == ("success", 2), reason
    assert reason.startswith(f"Spark Connect server {server.host}:{server.port} (conn_id='{KILLED_CONN_ID}')")
    assert "txn identity keeps it from writing twice" in reason, reason
    report = xcom_value(dr, MERGE_TASK, REPORT_XCOM_KEY)
    assert report["status"] == "skipped_duplicate" and report["skipped_duplicate"] is True, report
    table_now = DeltaTable(table)
    assert table_now.version() == 1
    assert [h["operation"] for h in table_now.history()].count("MERGE") == 1
    assert _contents(table) == [(1, "2026-11-20", "merged")]


def test_a_session_the_jobs_own_code_stopped_on_a_live_server_is_not_called_a_lost_server(
    killable_connect_server: ConnectServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's code stops its own session: every later call raises NO_ACTIVE_SESSION, as after a server
    loss, but the server still runs the same Spark application, so the failure stays the job's."""
    import airflow_provider_deltacc.spark_job.main as job_main

    monkeypatch.setenv(f"AIRFLOW_CONN_{KILLED_CONN_ID.upper()}", killable_connect_server.server.conn_uri)
    table = str(tmp_path / "balances")
    _seed(table)
    run_job = job_main.run_job

    def stopping(frame: Any, attempt: int) -> Any:
        frame.sparkSession.stop()
        return frame

    def run_job_stopping(
        spec: Any, spark: Any = None, *, source_hook: Any = None, turns: Any = None, **kwargs: Any
    ) -> Any:
        return run_job(spec, spark, source_hook=stopping, turns=turns, **kwargs)

    monkeypatch.setattr(job_main, "run_job", run_job_stopping)
    starts = killable_connect_server.starts
    spec = {
        "operation": "merge",
        "table": table,
        "source": _rows([[1, "2026-11-20", "merged"]]),
        "options": {"keys": ["id"]},
        "txn": {"app_id": "own.stop", "version": 1},
    }
    with pytest.raises(AirflowException) as raised:
        _hook(KILLED_CONN_ID).run(spec)
    assert not isinstance(raised.value, DeltaCCInfrastructureError), raised.value
    assert "NO_ACTIVE_SESSION" in str(raised.value), raised.value
    assert killable_connect_server.starts == starts and killable_connect_server.process is not None


def test_a_connect_server_killed_while_writers_wait_in_their_turns_leaves_each_writer_committed_once(
    killable_connect_server: ConnectServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three unpinned MERGEs of one table as ``spark_connect`` tasks sharing a lease store: the first holds
    its turn and is held at a gate on the server; the other two have their write leases and wait in their
    turns behind it (they would surely conflict with it). The server is SIGKILLed there and started again. The
    first writer's try fails as infrastructure and its turn ends with it; the two that waited go on in turn
    (a try that loses its session to the restart fails as infrastructure and is retried, as Airflow would);
    every writer commits exactly once and no lease is left behind."""
    import airflow_provider_deltacc.spark_job.main as job_main
    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.contract.table_location import table_key
    from airflow_provider_deltacc.leases import SqliteLeaseStore
    from airflow_provider_deltacc.operators import DeltaMergeOperator
    from tests.support.delta_log import log_commits
    from tests.unit.airflow_face.conftest import make_context

    monkeypatch.setenv(f"AIRFLOW_CONN_{KILLED_CONN_ID.upper()}", killable_connect_server.server.conn_uri)
    table = str(tmp_path / "balances")
    _seed(table)
    store_path = tmp_path / "leases.db"
    gate = Gate(tmp_path, timeout_s=180)
    run_job, calls, lock = job_main.run_job, [], threading.Lock()

    def first_call_held(
        spec: Any, spark: Any = None, *, source_hook: Any = None, turns: Any = None, **kwargs: Any
    ) -> Any:
        with lock:
            calls.append(spec)
            first = len(calls) == 1
        hold = (lambda frame, attempt: gate.hold(frame, "id") if attempt == 1 else frame) if first else None
        return run_job(spec, spark, source_hook=hold, turns=turns, **kwargs)

    monkeypatch.setattr(job_main, "run_job", first_call_held)
    reports: dict[int, dict[str, Any]] = {}
    failed: dict[int, list[str]] = {index: [] for index in range(3)}
    errors: dict[int, BaseException] = {}

    def writer(index: int) -> None:
        task_id = f"merge_{index}"
        try:
            for try_number in (1, 2, 3):  # Airflow's tries: retries=2
                op = DeltaMergeOperator(
                    task_id=task_id,
                    table=table,
                    source=_rows([[index + 1, "2026-11-20", f"w{index}"]]),
                    keys=["id"],
                    partition_pin=None,
                    execution_mode="spark_connect",
                    conn_id=KILLED_CONN_ID,
                    lease_store_url=f"sqlite:///{store_path}",
                )
                try:
                    reports[index] = op.execute(
                        make_context(task_id=task_id, try_number=try_number, max_tries=3)
                    )
                    return
                except DeltaCCInfrastructureError as exc:
                    failed[index].append(str(exc))
        except BaseException as exc:  # reported by the assertions below
            errors[index] = exc

    threads = [threading.Thread(target=writer, args=(index,), name=f"writer-{index}") for index in range(3)]
    threads[0].start()
    gate.wait_entered()
    for thread in threads[1:]:
        thread.start()
    key = table_key(Table(table))
    with SqliteLeaseStore(store_path) as store:
        deadline = time.monotonic() + 120
        while len(store.active(key)) < 3:  # the two later writers hold their leases and wait for their turns
            assert time.monotonic() < deadline, f"the later writers never queued: {store.active(key)}"
            time.sleep(0.1)
        queued = [lease.holder for lease in store.active(key)]
        killable_connect_server.kill()
        gate.release()  # the held job goes on against a dead server
        killable_connect_server.start()  # as a supervisor would
        for thread in threads:
            thread.join(timeout=300)
        left = store.active(key)
    assert not any(thread.is_alive() for thread in threads), "a writer never finished"
    assert not errors, errors
    assert len(queued) == 3, queued
    # The held writer's try died with the server, as infrastructure naming the connection.
    assert failed[0] and all(f"conn_id='{KILLED_CONN_ID}'" in message for message in failed[0]), failed
    assert {index: report["status"] for index, report in reports.items()} == dict.fromkeys(
        range(3), "committed"
    )
    assert left == [], left
    merges = [c for c in log_commits(table) if c["commitInfo"].get("operation") == "MERGE"]
    identities = [(t["appId"], t["version"]) for c in merges for t in c["txn"]]
    assert len(merges) == 3 and len(set(identities)) == 3, merges
    assert _contents(table) == [(1, "2026-11-20", "w0"), (2, "2026-11-20", "w1"), (3, "2026-11-20", "w2")]
    print(f"tries that failed as infrastructure, by writer: { {i: len(f) for i, f in failed.items()} }")
