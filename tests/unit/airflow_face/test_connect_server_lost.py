"""When a Spark Connect run's session was closed under it, the runner asks the server whether it went away:
infrastructure naming the connection and the server when it did, the job's own failure when it did not.
Fakes stand for the server (tests/integration/airflow_face/test_spark_connect.py kills a real one)."""

from __future__ import annotations

from typing import Any

import pytest

import airflow_provider_deltacc.hooks.connect as connect
import airflow_provider_deltacc.spark_job.main as job_main
from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError
from airflow_provider_deltacc.hooks.connect import SparkConnectRunner

pytestmark = pytest.mark.unit

CONN_ID = "deltacc_lost_server"
SERVER = "Spark Connect server connect-host:15002 (conn_id='deltacc_lost_server')"


class FakeServer:
    """What the runner sees of the server: whether it accepts connections, and its Spark application."""

    def __init__(self) -> None:
        self.application = "local-1"
        self.reachable = True
        self.sessions: list[FakeSession] = []


class FakeSession:
    def __init__(self, server: FakeServer) -> None:
        self.server, self.stopped = server, False
        self.session_id = f"session-{len(server.sessions)}"
        self.conf = self

    def get(self, key: str, default: Any = None) -> str:
        assert key == "spark.app.id"
        return self.server.application

    def stop(self) -> None:
        self.stopped = True


def _failed(closed: str | None = "NO_ACTIVE_SESSION", txn: bool = True) -> dict[str, Any]:
    error: dict[str, Any] = {
        "type": "SparkConnectException",
        "message": f"[{closed}] No active Spark session",
    }
    if closed:
        error["session_lost"] = closed
    return {
        "status": "error",
        "txn_app_id": "dag.merge" if txn else None,
        "txn_version": 7 if txn else None,
        "error": error,
    }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    fake = FakeServer()
    # One session per run, released: kept sessions are tested on a real server (test_connect_session_reuse).
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}", "spark-connect://connect-host:15002?session_reuse=false"
    )

    def new_session(url: str) -> FakeSession:
        assert fake.reachable, "opened a session on a server that is down"
        session = FakeSession(fake)
        fake.sessions.append(session)
        return session

    def check_reachable(self: SparkConnectRunner, timeout_s: float = 5.0) -> None:
        if not fake.reachable:
            raise DeltaCCInfrastructureError("refused", unreachable=self.server_name)

    monkeypatch.setattr(connect, "new_connect_session", new_session)
    monkeypatch.setattr(SparkConnectRunner, "check_reachable", check_reachable)
    return fake


def _run(monkeypatch: pytest.MonkeyPatch, outcome: tuple[int, dict[str, Any]], during: Any = None) -> Any:
    def run_job(spec: Any, spark: Any, *, turns: Any = None) -> tuple[int, dict[str, Any]]:
        if during is not None:
            during()
        return outcome

    monkeypatch.setattr(job_main, "run_job", run_job)
    return SparkConnectRunner(conn_id=CONN_ID, job_name="deltacc-dag-merge").run({"operation": "merge"})


def test_a_server_that_no_longer_answers_is_infrastructure_naming_the_connection(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def die() -> None:
        server.reachable = False

    with pytest.raises(DeltaCCInfrastructureError) as raised:
        _run(monkeypatch, (ExitCode.FAILURE, _failed()), during=die)
    assert raised.value.unreachable == SERVER
    message = str(raised.value)
    assert "conn_id='deltacc_lost_server': the Spark Connect server connect-host:15002 went away" in message
    assert "NO_ACTIVE_SESSION; the server does not answer" in message
    assert "A retry is safe: its txn identity keeps it from writing twice" in message
    assert raised.value.report is not None and raised.value.report["status"] == "error"
    assert server.sessions[0].stopped


def test_a_restarted_server_is_infrastructure(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def restart() -> None:
        server.application = "local-2"

    with pytest.raises(
        DeltaCCInfrastructureError, match=r"restarted \(Spark application local-1, now local-2"
    ):
        _run(monkeypatch, (ExitCode.FAILURE, _failed("INVALID_HANDLE.SESSION_CLOSED")), during=restart)
    assert len(server.sessions) == 2 and all(s.stopped for s in server.sessions)  # the probe is released


def test_a_session_closed_by_the_jobs_own_code_on_a_live_server_stays_the_jobs_failure(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same server (same Spark application) answers: the job's code stopped its session itself."""
    code, report = _run(monkeypatch, (ExitCode.FAILURE, _failed()))
    assert code == ExitCode.FAILURE and report["error"]["session_lost"] == "NO_ACTIVE_SESSION"


def test_a_server_that_does_not_tell_its_application_is_not_called_lost(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.application = ""
    code, _ = _run(monkeypatch, (ExitCode.FAILURE, _failed()))
    assert code == ExitCode.FAILURE


def test_other_failures_do_not_ask_the_server(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    def die() -> None:
        server.reachable = False

    code, _ = _run(monkeypatch, (ExitCode.FAILURE, _failed(closed=None)), during=die)
    assert code == ExitCode.FAILURE


def test_a_job_that_saw_the_server_go_away_names_the_connection(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = {**_failed(None, txn=False), "error": {"message": "failed to connect", "unreachable": ""}}
    report["error"]["unreachable"] = "Spark Connect server (gRPC UNAVAILABLE)"
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        _run(monkeypatch, (ExitCode.UNAVAILABLE, report))
    assert raised.value.unreachable == SERVER
    assert "went away while the job ran (gRPC UNAVAILABLE). " in str(raised.value)
    assert str(raised.value).endswith("Session session-0: failed to connect")
    assert "no txn identity: if the lost operation committed, a retry writes again" in str(raised.value)
