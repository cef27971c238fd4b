"""A writer's turns served to its Spark driver over HTTP on loopback: the driver's commit loop waits for the
writers ahead of it after a lost conflict, as a loop in the worker does; a wrong token or a service that is
gone means no turns (the backoff policy), never a failed write."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.occ.operations import OpKind
from airflow_provider_deltacc.occ.remote_turns import RemoteTurns
from airflow_provider_deltacc.spark_job.spec import parse_spec
from airflow_provider_deltacc.windows import SqliteLeaseStore, TurnQueue
from airflow_provider_deltacc.windows.guarded import GuardedWrite
from airflow_provider_deltacc.windows.turn_service import serve_turns
from tests.unit.windows.helpers import Watched, grant, release_after

pytestmark = pytest.mark.unit

TABLE = "/lake/orders"
DAY1 = [{"date": "2026-11-20"}]


class RecordingTurns:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.timeout_s = 5.0

    def first(self) -> float | None:
        self.calls.append(("first",))
        return 0.25

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        self.calls.append(("retry", conflict_kind, attempt))
        return 1.5


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteLeaseStore]:
    with SqliteLeaseStore(tmp_path / "leases.db") as opened:
        yield opened


def test_the_driver_asks_the_worker_for_its_turns_over_loopback() -> None:
    recording = RecordingTurns()
    with serve_turns(recording, timeout_s=5.0) as service:
        assert service.url.startswith("http://127.0.0.1:") and len(service.token) >= 32
        assert service.token not in repr(service)
        remote = RemoteTurns(service.url, service.token, service.timeout_s)
        assert remote.first() == 0.25
        assert remote.retry("APPEND", 2) == 1.5
    assert recording.calls == [("first",), ("retry", "APPEND", 2)]


def test_a_wrong_token_or_a_service_that_is_gone_means_no_turns(caplog: pytest.LogCaptureFixture) -> None:
    recording = RecordingTurns()
    with serve_turns(recording, timeout_s=5.0) as service:
        stranger = RemoteTurns(service.url, "not-the-token", 5.0)
        assert stranger.retry("APPEND", 1) is None and stranger.retry("APPEND", 2) is None
        request = urllib.request.Request(f"{service.url}/retry", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError, match="403"):
            urllib.request.urlopen(request, timeout=5)
    assert recording.calls == []
    assert caplog.text.count("does not answer") == 1  # one warning, then quietly the backoff policy
    assert RemoteTurns(service.url, service.token, 1.0).first() is None  # the service stopped with the job


def test_after_a_lost_conflict_the_driver_waits_for_a_writer_ahead_that_can_conflict(
    store: SqliteLeaseStore,
) -> None:
    appender = grant(store, TABLE, OpKind.BLIND_APPEND, None, holder="earlier.append")  # can conflict
    mine = grant(store, TABLE, OpKind.MERGE, DAY1, holder="ingest.merge_day1")
    watched = Watched(store, "active")
    queue = TurnQueue(watched, mine, timeout_s=30.0)  # type: ignore[arg-type]
    with serve_turns(queue, timeout_s=30.0) as service:
        remote = RemoteTurns(service.url, service.token, service.timeout_s)
        assert remote.first() == 0.0  # a pinned MERGE will not conflict with a blind append: no wait
        watched.called.clear()
        releaser = release_after(store, appender.lease_id, watched.called, 0.5)
        waited = remote.retry("APPEND", 1)
        releaser.join(timeout=30)
    assert waited is not None and waited >= 0.5


def test_a_job_whose_loop_runs_in_a_driver_gets_the_service_for_its_length() -> None:
    spec = parse_spec(
        {
            "operation": "merge",
            "table": TABLE,
            "source": {"kind": "table", "name": "db.staging"},
            "options": {"keys": ["id", "date"]},
        }
    )
    recording = RecordingTurns()
    seen: list[Any] = []

    def run_job(job: Any, *, turns: Any = None) -> dict[str, Any]:
        assert turns is None and job.turn_service is not None
        seen.append(job.turn_service)
        remote = RemoteTurns(job.turn_service.url, job.turn_service.token, 5.0)
        assert remote.retry("APPEND", 1) == 1.5  # served while the job runs
        return {"status": "committed", "table": TABLE, "attempts": []}

    report = GuardedWrite(spec, turns=recording).run(  # type: ignore[arg-type]
        run_job, loop_takes_turns=False, serve_turns_to_job=True
    )
    assert report["admission_wait_s"] == 0.25 and recording.calls[0] == ("first",)
    assert RemoteTurns(seen[0].url, seen[0].token, 1.0).retry("APPEND", 2) is None  # gone after the job
