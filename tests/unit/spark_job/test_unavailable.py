"""The shapes a lost Spark Connect server takes on the client, with fakes of pyspark's and gRPC's errors (the
real ones are raised by tests/integration/airflow_face/test_spark_connect.py)."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from airflow_provider_deltacc.spark_job.unavailable import session_lost, unavailable_reason

pytestmark = pytest.mark.unit


class _Code(enum.Enum):
    UNAVAILABLE = 14
    INTERNAL = 13


class FakeConnectError(Exception):
    """Like pyspark's Spark Connect errors: an error condition and a gRPC status code."""

    def __init__(self, message: str, condition: str | None = None, code: _Code | None = None) -> None:
        super().__init__(message)
        self.condition, self.code_ = condition, code

    def getCondition(self) -> str | None:
        return self.condition

    def getGrpcStatusCode(self) -> Any:
        return self.code_


def _raised_while_handling(first: BaseException, then: BaseException) -> BaseException:
    """``then`` as pyspark raises it after ``first``: ``raise ... from None`` inside the handler."""
    try:
        try:
            raise first
        except BaseException:
            raise then from None
    except BaseException as exc:
        return exc


def _session_changed() -> FakeConnectError:
    return FakeConnectError(
        "[INVALID_HANDLE.SESSION_CHANGED] The handle 5b0c... is invalid. The existing Spark server driver "
        "instance has restarted. Please reconnect.",
        "INVALID_HANDLE.SESSION_CHANGED",
        _Code.INTERNAL,
    )


def _no_active_session() -> FakeConnectError:
    """A fresh one each time: raising an error sets its ``__context__``."""
    return FakeConnectError(
        "[NO_ACTIVE_SESSION] No active Spark session found. Please create a new Spark session before "
        "running the code.",
        "NO_ACTIVE_SESSION",
    )


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (_session_changed(), "session lost: INVALID_HANDLE.SESSION_CHANGED"),
        (
            # a reattach to a restarted server: only the gRPC status message names it
            RuntimeError("<_MultiThreadedRendezvous: INVALID_HANDLE.SESSION_NOT_FOUND] Session not found"),
            "session lost: INVALID_HANDLE.SESSION_NOT_FOUND",
        ),
        (
            AssertionError(
                "Received incorrect server side session identifier for request. Please create a new Spark "
                "Session to reconnect. (c9e... != 0a1...)"
            ),
            "session lost: server side session changed",
        ),
        (FakeConnectError("failed to connect to all addresses", code=_Code.UNAVAILABLE), "gRPC UNAVAILABLE"),
        (
            FakeConnectError("Connection reset by peer", code=_Code.UNAVAILABLE),
            "gRPC UNAVAILABLE",
        ),
        # pyspark's NO_ACTIVE_SESSION after it closed the session on SESSION_CHANGED: the chain tells
        (
            _raised_while_handling(_session_changed(), _no_active_session()),
            "session lost: INVALID_HANDLE.SESSION_CHANGED",
        ),
    ],
    ids=["session changed", "session not found", "server session id", "unavailable", "reset", "chain"],
)
def test_a_lost_server_is_unavailable(error: BaseException, reason: str) -> None:
    assert unavailable_reason(error) == f"Spark Connect server ({reason})"


@pytest.mark.parametrize(
    ("error", "closed"),
    [
        (_no_active_session(), "NO_ACTIVE_SESSION"),
        (
            FakeConnectError(
                "[INVALID_HANDLE.SESSION_CLOSED] Session 5b0c... was closed.", "INVALID_HANDLE.SESSION_CLOSED"
            ),
            "INVALID_HANDLE.SESSION_CLOSED",
        ),
        (ValueError("the commit loop gave up").with_traceback(None), None),
    ],
    ids=["no active session", "session closed", "other"],
)
def test_a_closed_session_alone_is_not_called_a_lost_server(error: BaseException, closed: str | None) -> None:
    """The job's own code can close its session too: only the server can tell, so the job just names it."""
    assert unavailable_reason(error) is None
    assert session_lost(error) == closed


def test_a_closed_session_deep_in_the_cause_chain_is_named() -> None:
    try:
        try:
            raise _no_active_session()
        except FakeConnectError as inner:
            raise RuntimeError("the commit loop stopped") from inner
    except RuntimeError as outer:
        assert session_lost(outer) == "NO_ACTIVE_SESSION"


def test_user_errors_and_conflicts_are_neither() -> None:
    for error in (
        FakeConnectError("[UNRESOLVED_COLUMN] amount", "UNRESOLVED_COLUMN", _Code.INTERNAL),
        FakeConnectError("[DELTA_CONCURRENT_APPEND] ...", "DELTA_CONCURRENT_APPEND", _Code.INTERNAL),
        KeyError("id"),
    ):
        assert unavailable_reason(error) is None and session_lost(error) is None


@pytest.mark.parametrize(
    ("raised", "code", "session_lost_field"),
    [
        (_no_active_session, 1, "NO_ACTIVE_SESSION"),
        (lambda: _raised_while_handling(_session_changed(), _no_active_session()), 69, None),
        (lambda: KeyError("id"), 1, None),
    ],
    ids=["closed session", "lost server", "other"],
)
def test_run_job_marks_a_closed_session_for_the_runner_and_a_lost_server_as_unavailable(
    raised: Any, code: int, session_lost_field: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import airflow_provider_deltacc.engine.run as engine_run
    from airflow_provider_deltacc.spark_job import main

    def run_operation(*args: Any, **kwargs: Any) -> Any:
        raise raised()

    monkeypatch.setattr(engine_run, "run_operation", run_operation)
    monkeypatch.setattr(main, "check_storage_safety", lambda session, spec: None)
    spec = {
        "operation": "merge",
        "table": "/t",
        "source": {"kind": "rows", "rows": [[1]], "schema": "id INT"},
    }
    exit_code, report = main.run_job({**spec, "options": {"keys": ["id"]}}, spark=object())  # type: ignore[arg-type]
    assert exit_code == code, report
    assert report["error"].get("session_lost") == session_lost_field
