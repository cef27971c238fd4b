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

from airflow_provider_deltacc.contract.exceptions import LeaseLapsedError
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.leases import LeaseRequest, SqliteLeaseStore, hold_lease
from airflow_provider_deltacc.leases.conflicts import any_lease
from airflow_provider_deltacc.leases.fence import LeaseFence
from airflow_provider_deltacc.occ.remote_turns import RemoteTurns
from airflow_provider_deltacc.turns import LeaseTurns
from airflow_provider_deltacc.turns.guarded import GuardedWrite
from airflow_provider_deltacc.turns.service import serve_turns
from tests.unit.leases.helpers import Watched, grant, release_after

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
    queue = LeaseTurns(watched, mine, timeout_s=30.0)  # type: ignore[arg-type]
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
    assert report["first_turn_wait_s"] == 0.25 and recording.calls[0] == ("first",)
    assert RemoteTurns(seen[0].url, seen[0].token, 1.0).retry("APPEND", 2) is None  # gone after the job


class LapsingFence(RecordingTurns):
    """A lease fence whose lease lapses once ``lapsed`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.lapsed = False

    def _check(self) -> None:
        if self.lapsed:
            raise LeaseLapsedError(
                TABLE, "BLIND_APPEND lease by dag.w/run (id 7)", 4.0, "not renewed for 5 s"
            )

    def first(self) -> float | None:
        self._check()
        return super().first()

    def before_commit(self) -> None:
        self.calls.append(("before_commit",))
        self._check()


def test_a_fenced_driver_checks_the_workers_lease_before_its_commit_and_a_lapsed_one_stops_it() -> None:
    fence = LapsingFence()
    with serve_turns(fence, timeout_s=5.0, fenced=True) as service:
        assert service.fenced
        remote = RemoteTurns(service.url, service.token, 5.0, fenced=True, table=TABLE)
        assert remote.first() == 0.25
        remote.before_commit()  # the lease holds
        fence.lapsed = True
        with pytest.raises(LeaseLapsedError) as raised:
            remote.before_commit()
        with pytest.raises(LeaseLapsedError):
            remote.first()
    assert fence.calls == [("first",), ("before_commit",), ("before_commit",)]
    error = raised.value
    assert (error.table, error.ttl_s, error.why) == (TABLE, 4.0, "not renewed for 5 s")
    assert "lapsed before the commit" in str(error) and "BLIND_APPEND lease" in str(error)
    # The service ended with the job: a fenced driver cannot confirm the lease, so it does not commit.
    with pytest.raises(LeaseLapsedError, match="did not answer"):
        RemoteTurns(service.url, service.token, 1.0, fenced=True, table=TABLE).before_commit()


def test_an_unfenced_driver_asks_nothing_before_its_commit() -> None:
    RemoteTurns("http://127.0.0.1:9", "token", 1.0).before_commit()  # nothing listens there: not asked


def test_a_driver_whose_write_the_exclusive_lease_keeps_safe_checks_it_through_the_worker(
    store: SqliteLeaseStore,
) -> None:
    spec = parse_spec(
        {"operation": "append", "table": TABLE, "source": {"kind": "table", "name": "db.staging"}}
    )
    request = LeaseRequest(table=TABLE, holder="dag.w/run", op_kind=OpKind.BLIND_APPEND, ttl_s=30.0)
    answers: list[str] = []

    def run_job(job: Any, *, turns: Any = None) -> dict[str, Any]:
        assert turns is None and job.turn_service is not None and job.turn_service.fenced
        remote = RemoteTurns(job.turn_service.url, job.turn_service.token, 5.0, fenced=True, table=TABLE)
        remote.first()
        remote.before_commit()
        answers.append("holds")
        held.renewed_at -= 31.0  # the store has not answered for longer than the TTL
        try:
            remote.before_commit()
        except LeaseLapsedError as exc:
            answers.append(f"lapsed: {exc.why}")
        return {"status": "error", "table": TABLE, "attempts": []}

    with hold_lease(store, request, conflicts=any_lease, wait_timeout_s=0, heartbeat_s=29.0) as held:
        GuardedWrite(spec, fence=LeaseFence(held)).run(
            run_job, loop_takes_turns=False, serve_turns_to_job=True
        )
    assert answers[0] == "holds" and answers[1].startswith("lapsed: "), answers
