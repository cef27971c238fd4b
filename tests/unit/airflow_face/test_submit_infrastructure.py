"""spark_submit infrastructure failures, on real processes without a JVM: a ``spark://`` master that refuses
connections and a driver ended by a signal are DeltaCCInfrastructureError (the retry policy retries them
with the task's own delay, naming what was unreachable); a malformed master URL stays bad input, a driver
that exits 1 stays an ordinary failure, and a driver the task itself killed (``on_kill``) is not blamed on
the cluster. The killed drivers are stand-in ``spark-submit`` scripts first on the PATH."""

from __future__ import annotations

import json
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import RetryAction
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.submit import ReportingSparkSubmitHook, killing_signal
from airflow_provider_deltacc.operators.base import DEFAULT_RETRY_POLICY

pytestmark = pytest.mark.unit

CONN_ID = "deltacc_infra_unit"


def _connection(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "spark", "host": host}))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: connecting to it is refused


@pytest.mark.parametrize(
    "master",
    ["spark://", "spark://master:not-a-port", "spark://master:99999", "spark://m1:7077,", "spark://:7077"],
)
def test_a_malformed_master_url_is_bad_input(monkeypatch: pytest.MonkeyPatch, master: str) -> None:
    _connection(monkeypatch, master)
    runner = DeltaCCHook(conn_id=CONN_ID).submit_runner
    with pytest.raises(DeltaCCInputError) as raised:
        runner.check_master_reachable()
    assert raised.value.field == "conn_id" and raised.value.value == CONN_ID
    assert f"the Spark master URL {master} is malformed" in str(raised.value)
    assert DEFAULT_RETRY_POLICY.evaluate(raised.value, 1, 2).action is RetryAction.FAIL


@pytest.mark.parametrize(
    ("master", "addresses"),
    [
        ("spark://master", [("master", 7077)]),
        ("spark://m1:7077,m2:7078", [("m1", 7077), ("m2", 7078)]),
        ("spark://[::1]:7077", [("::1", 7077)]),
        ("local[2]", []),
        ("yarn", []),
    ],
)
def test_master_addresses(monkeypatch: pytest.MonkeyPatch, master: str, addresses: list[Any]) -> None:
    _connection(monkeypatch, master)
    assert DeltaCCHook(conn_id=CONN_ID).submit_runner.master_addresses() == addresses


def test_a_refusing_master_is_infrastructure_naming_the_master_and_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    down, also_down = _closed_port(), _closed_port()
    master = f"spark://127.0.0.1:{down},127.0.0.1:{also_down}"
    _connection(monkeypatch, master)
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        DeltaCCHook(conn_id=CONN_ID).submit_runner.check_master_reachable(timeout_s=2)
    error = raised.value
    assert error.unreachable == f"Spark master {master} (conn_id='{CONN_ID}')"
    assert f"127.0.0.1:{down}: ConnectionRefusedError" in str(error)
    assert f"127.0.0.1:{also_down}: ConnectionRefusedError" in str(error)
    decision = DEFAULT_RETRY_POLICY.evaluate(error, try_number=1, max_tries=2)
    assert decision.action is RetryAction.RETRY and decision.retry_delay is None
    assert (decision.reason or "").startswith(f"Spark master {master} (conn_id='{CONN_ID}') unreachable: ")


def test_one_answering_master_of_several_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        _connection(monkeypatch, f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{port}")
        DeltaCCHook(conn_id=CONN_ID).submit_runner.check_master_reachable(timeout_s=2)


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (-9, "SIGKILL"),
        (-15, "SIGTERM"),
        (-11, "SIGSEGV"),
        (137, "SIGKILL"),
        (143, "SIGTERM"),
        (-99, "signal 99"),
    ],
)
def test_killing_signal(code: int, name: str) -> None:
    assert killing_signal(code) == name


@pytest.mark.parametrize("code", [None, 0, 1, 64, 69, 75, 76, 130, 255])
def test_ordinary_exit_codes_are_not_signals(code: int | None) -> None:
    assert killing_signal(code) is None


def _fake_spark_submit(directory: Path, body: str) -> None:
    """A ``spark-submit`` first on the PATH that runs ``body`` (a shell script) instead of Spark."""
    directory.mkdir(exist_ok=True)
    script = directory / "spark-submit"
    script.write_text(f"#!/bin/sh\necho 'Running Spark version 4.2.0 (stand-in)'\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def local_hook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> DeltaCCHook:
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    _connection(monkeypatch, "local[1]")
    return DeltaCCHook(conn_id=CONN_ID, execution_mode="spark_submit")


def _spec(tmp_path: Path) -> dict[str, Any]:
    return {
        "operation": "append",
        "table": str(tmp_path / "events"),
        "source": {"kind": "rows", "rows": [[1]], "schema": "id INT"},
        "txn": {"app_id": "killed-driver-unit", "version": 1},
    }


@pytest.mark.parametrize(
    ("body", "signal_name", "status"),
    [("kill -KILL $$", "SIGKILL", -9), ("exit 137", "SIGKILL", 137), ("exit 143", "SIGTERM", 143)],
)
def test_a_driver_killed_before_its_report_is_infrastructure(
    local_hook: DeltaCCHook, tmp_path: Path, body: str, signal_name: str, status: int
) -> None:
    _fake_spark_submit(tmp_path / "bin", body)
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        local_hook.run(_spec(tmp_path))
    error = raised.value
    assert error.unreachable == f"the Spark driver JVM (killed by {signal_name}; conn_id='{CONN_ID}')"
    assert f"was killed by {signal_name} (exit status {status}) before it reported" in str(error)
    assert "the re-run finds its txn identity and skips the write" in str(error)
    decision = DEFAULT_RETRY_POLICY.evaluate(error, try_number=1, max_tries=2)
    assert decision.action is RetryAction.RETRY and decision.retry_delay is None
    assert (decision.reason or "").startswith(f"the Spark driver JVM (killed by {signal_name}")


def test_a_driver_that_exits_1_with_a_python_error_is_an_ordinary_failure(
    local_hook: DeltaCCHook, tmp_path: Path
) -> None:
    _fake_spark_submit(
        tmp_path / "bin", "echo 'Traceback (most recent call last):'\necho 'ValueError: boom'\nexit 1"
    )
    with pytest.raises(AirflowException) as raised:
        local_hook.run(_spec(tmp_path))
    assert not isinstance(raised.value, DeltaCCInfrastructureError)
    assert "exit code 1" in str(raised.value)
    assert DEFAULT_RETRY_POLICY.evaluate(raised.value, 1, 2).action is RetryAction.DEFAULT


def test_a_kill_that_comes_while_spark_submit_is_starting_is_not_lost(
    local_hook: DeltaCCHook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Airflow may stop the task after the hook exists but before spark-submit's process does."""
    _fake_spark_submit(tmp_path / "bin", "exec sleep 60")
    submit = ReportingSparkSubmitHook.submit

    def killed_while_starting(self: ReportingSparkSubmitHook, *args: Any, **kwargs: Any) -> Any:
        self.on_kill()  # no process yet: the provider's on_kill alone would do nothing
        return submit(self, *args, **kwargs)

    monkeypatch.setattr(ReportingSparkSubmitHook, "submit", killed_while_starting)
    with pytest.raises(AirflowException) as raised:  # a lost kill: sleep 60 ends with 0, nothing raised
        local_hook.run(_spec(tmp_path))
    assert "SIGKILL" in str(raised.value) or "exit code -9" in str(raised.value)


def test_a_driver_the_task_killed_itself_is_not_blamed_on_the_cluster(
    local_hook: DeltaCCHook, tmp_path: Path
) -> None:
    _fake_spark_submit(tmp_path / "bin", "exec sleep 60")  # like spark-class, which execs the JVM
    errors: list[BaseException] = []

    def run() -> None:
        try:
            local_hook.run(_spec(tmp_path))
        except BaseException as exc:  # inspected below
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 30
    while local_hook.submit_runner._submit_hook is None and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    local_hook.on_kill()  # what Airflow calls when it stops the task
    thread.join(30)
    [error] = errors
    assert isinstance(error, AirflowException) and not isinstance(error, DeltaCCInfrastructureError)
    assert "exit code -9" in str(error)
