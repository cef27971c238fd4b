"""The commit loop with a fake work callable, fake sleep and fake clock."""

from __future__ import annotations

import logging
import pickle
import random
from collections.abc import Callable

import pytest

from airflow_provider_deltacc.contract.commit_report import CommitReport
from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.exceptions import (
    CommitLoopError,
    ConflictError,
    ConflictFatalError,
    ConflictRetriesExhaustedError,
)
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.occ import WorkResult, run_commit_loop
from airflow_provider_deltacc.occ.advice import ADVICE
from airflow_provider_deltacc.occ.commit_loop import Turns
from tests.unit.occ.fakes import delta_class
from tests.unit.occ.recorded import fixture_text
from tests.unit.stepped_clock import SteppedClock

pytestmark = pytest.mark.unit

LOGGER = "airflow_provider_deltacc.occ.commit_loop"

ConcurrentAppendException = delta_class("ConcurrentAppendException")
ProtocolChangedException = delta_class("ProtocolChangedException")
MetadataChangedException = delta_class("MetadataChangedException")
ConcurrentTransactionException = delta_class("ConcurrentTransactionException")
ConcurrentWriteException = delta_class("ConcurrentWriteException")

APPEND_TEXT = fixture_text("spark_4_1_append_with_hint.txt")


class ScriptedWork:
    """Raises the scripted exceptions in order, each after ``duration`` seconds, then succeeds."""

    def __init__(
        self,
        fake: SteppedClock,
        failures: list[BaseException],
        *,
        duration: float = 1.0,
        outcome: WorkResult | None = None,
    ) -> None:
        self.fake = fake
        self.failures = list(failures)
        self.duration = duration
        self.outcome = outcome or WorkResult(table_version=42, metrics={"rows": 3})
        self.calls: list[int] = []

    def __call__(self, attempt_number: int) -> WorkResult:
        self.calls.append(attempt_number)
        self.fake.now += self.duration
        if self.failures:
            raise self.failures.pop(0)
        return self.outcome


def run(
    work: Callable[[int], WorkResult],
    fake: SteppedClock,
    *,
    policy: CommitRetryPolicy | None = None,
    op_class: OperationClass = OperationClass.READ_MODIFY_WRITE,
    owns_txn_identity: bool = False,
    seed: int = 1,
    turns: Turns | None = None,
) -> CommitReport:
    return run_commit_loop(
        work,
        operation="MERGE",
        table="orders",
        op_class=op_class,
        policy=policy or CommitRetryPolicy(),
        owns_txn_identity=owns_txn_identity,
        txn_app_id="app",
        txn_version=7,
        sleep=fake.sleep,
        clock=fake.monotonic,
        rng=random.Random(seed),
        turns=turns,
    )


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_first_attempt_commits(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    fake = SteppedClock()
    work = ScriptedWork(fake, [])

    report = run(work, fake)

    assert work.calls == [1]
    assert fake.sleeps == []
    assert report.status == "committed"
    assert report.table_version == 42
    assert report.metrics == {"rows": 3}
    assert (report.txn_app_id, report.txn_version) == ("app", 7)
    assert [a.outcome for a in report.attempts] == ["committed"]
    assert report.attempts[0].wasted_s == 0.0
    assert report.total_seconds == pytest.approx(1.0)
    assert warnings(caplog) == []
    assert "MERGE on orders: committed v42 after 1 attempt, no conflicts, 0.0 s wasted" in caplog.messages


def test_conflicts_then_commit(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    fake = SteppedClock()
    work = ScriptedWork(
        fake, [ConcurrentAppendException(APPEND_TEXT), ConcurrentAppendException(APPEND_TEXT)]
    )
    policy = CommitRetryPolicy()
    rng = random.Random(1)
    expected_waits = [policy.wait_for(1, rng), policy.wait_for(2, rng)]

    report = run(work, fake, policy=policy, seed=1)

    assert work.calls == [1, 2, 3]
    assert fake.sleeps == expected_waits
    assert report.status == "committed"
    assert [a.outcome for a in report.attempts] == ["conflict", "conflict", "committed"]
    assert [a.wait_s for a in report.attempts] == [*expected_waits, 0.0]
    assert [a.wasted_s for a in report.attempts] == [1.0, 1.0, 0.0]
    assert report.wasted_seconds == 2.0
    assert report.total_seconds == pytest.approx(3.0 + sum(expected_waits))
    assert report.attempts[0].conflict is not None
    assert report.attempts[0].conflict.kind is ConflictKind.APPEND
    assert report.attempts[0].exception is not None
    assert report.attempts[0].exception.startswith("ConcurrentAppendException: [DELTA_CONCURRENT_APPEND")
    starts = [a.started_at for a in report.attempts]
    assert starts[1] - starts[0] == pytest.approx(1.0 + expected_waits[0])

    lines = warnings(caplog)
    assert len(lines) == 2, "exactly one line per conflict"
    assert lines[0] == (
        "Delta conflict APPEND on table orders partition [date=2026-11-20] (winner: WRITE v7), "
        f"attempt 1 of 5, retrying in {expected_waits[0]:.2f} s. {ADVICE[ConflictKind.APPEND]}"
    )
    assert "attempt 2 of 5" in lines[1]
    assert report.max_attempts == 5 and report.pinned_columns == []
    assert "MERGE on orders: committed v42 after 3 attempts, 2 conflicts (APPEND x2), 2.0 s wasted" in (
        caplog.messages
    )


def test_log_records_use_lazy_formatting(caplog: pytest.LogCaptureFixture) -> None:
    fake = SteppedClock()
    run(ScriptedWork(fake, [ConcurrentAppendException(APPEND_TEXT)]), fake)

    record = next(r for r in caplog.records if r.levelno == logging.WARNING)
    assert "%s" in str(record.msg)
    assert record.args


def test_custom_logger() -> None:
    fake = SteppedClock()
    seen: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    logger = logging.getLogger("tests.occ.custom")
    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        run_commit_loop(
            ScriptedWork(fake, [ConcurrentAppendException(APPEND_TEXT)]),
            operation="MERGE",
            table="orders",
            op_class=OperationClass.READ_MODIFY_WRITE,
            policy=CommitRetryPolicy(),
            owns_txn_identity=False,
            logger=logger,
            sleep=fake.sleep,
            clock=fake.monotonic,
        )
    finally:
        logger.removeHandler(handler)

    assert [r.levelno for r in seen] == [logging.WARNING, logging.INFO]


def test_retries_exhausted(caplog: pytest.LogCaptureFixture) -> None:
    fake = SteppedClock()
    failures: list[BaseException] = [ConcurrentAppendException(APPEND_TEXT) for _ in range(10)]
    work = ScriptedWork(fake, failures)

    with pytest.raises(ConflictRetriesExhaustedError) as info:
        run(work, fake, policy=CommitRetryPolicy(max_attempts=3))

    error = info.value
    assert isinstance(error, ConflictError)
    assert isinstance(error.__cause__, ConcurrentAppendException)
    assert error.conflict.kind is ConflictKind.APPEND
    assert error.report.status == "conflict_exhausted"
    assert work.calls == [1, 2, 3]
    assert len(fake.sleeps) == 2
    assert [a.outcome for a in error.report.attempts] == ["conflict"] * 3
    assert error.report.attempts[-1].wait_s == 0.0
    assert error.report.wasted_seconds == 3.0
    lines = warnings(caplog)
    assert len(lines) == 3
    assert "attempt 3 of 3, giving up: attempt limit of 3 reached. Pin the target partitions" in lines[2]
    assert "still conflicting after 3 attempt(s)" in str(error)


def test_fatal_conflict_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    fake = SteppedClock()
    text = fixture_text("spark_4_4_protocol_create_race.txt")
    work = ScriptedWork(fake, [ProtocolChangedException(text)])

    with pytest.raises(ConflictFatalError) as info:
        run(work, fake)

    error = info.value
    assert work.calls == [1]
    assert fake.sleeps == []
    assert error.conflict.kind is ConflictKind.PROTOCOL_CHANGED
    assert error.conflict.create_race is True
    assert "protocol changed" in error.reason
    assert error.report.status == "conflict_fatal"
    assert error.report.attempts[0].outcome == "conflict"
    assert error.report.attempts[0].wasted_s == 1.0
    assert isinstance(error.__cause__, ProtocolChangedException)
    lines = warnings(caplog)
    assert len(lines) == 1
    assert lines[0].startswith(
        # The captured delta-spark 4.4 create race: the winner's CommitInfo states no version.
        "Delta conflict PROTOCOL_CHANGED on table orders (winner: WRITE) "
        "(concurrent table creation), attempt 1 of 5, not retrying: "
    )
    assert lines[0].endswith(f". {ADVICE[ConflictKind.PROTOCOL_CHANGED]}")
    assert "retrying in" not in lines[0]


def test_non_conflict_error(caplog: pytest.LogCaptureFixture) -> None:
    fake = SteppedClock()
    original = ValueError("bad literal for column date\nsecond line")
    work = ScriptedWork(fake, [original])

    with pytest.raises(CommitLoopError) as info:
        run(work, fake)

    error = info.value
    assert not isinstance(error, ConflictError)
    assert error.__cause__ is original
    assert error.report.status == "error"
    assert work.calls == [1]
    attempt = error.report.attempts[0]
    assert attempt.outcome == "error"
    assert attempt.conflict is None
    assert attempt.exception == "ValueError: bad literal for column date"
    assert warnings(caplog) == []


def test_total_timeout_stops_and_waits_never_pass_it(caplog: pytest.LogCaptureFixture) -> None:
    fake = SteppedClock()
    failures: list[BaseException] = [ConcurrentAppendException(APPEND_TEXT) for _ in range(10)]
    work = ScriptedWork(fake, failures, duration=4.0)
    policy = CommitRetryPolicy(
        max_attempts=10, min_wait_s=1.0, max_wait_s=30.0, total_timeout_s=10.0, jitter="none"
    )

    with pytest.raises(ConflictRetriesExhaustedError) as info:
        run(work, fake, policy=policy)

    # t=4 fail, wait 1; t=9 fail, wait min(2, 10-9)=1; t=14 fail -> past the timeout
    assert fake.sleeps == [1.0, 1.0]
    assert work.calls == [1, 2, 3]
    assert info.value.report.total_seconds == pytest.approx(14.0)
    assert "total timeout of 10 s reached after 14.0 s" in warnings(caplog)[-1]


def test_owned_txn_identity_turns_concurrent_transaction_into_a_reported_skip() -> None:
    fake = SteppedClock()
    work = ScriptedWork(
        fake,
        [ConcurrentTransactionException(fixture_text("spark_4_4_concurrent_transaction.txt"))],
        outcome=WorkResult(table_version=90, skipped_duplicate=True),
    )

    report = run(work, fake, op_class=OperationClass.BLIND_APPEND, owns_txn_identity=True)

    assert report.status == "skipped_duplicate"
    assert report.skipped_duplicate is True
    assert [a.outcome for a in report.attempts] == ["conflict", "skipped_duplicate"]
    assert "skipped as an already-committed duplicate v90" in report.summary_line()


def test_concurrent_transaction_without_identity_is_fatal() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [ConcurrentTransactionException("A conflicting metadata domain d is added.")])

    with pytest.raises(ConflictFatalError):
        run(work, fake, owns_txn_identity=False)


def test_metadata_changed_replans_once_then_fails() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [MetadataChangedException("m1"), MetadataChangedException("m2")])

    with pytest.raises(ConflictFatalError) as info:
        run(work, fake)

    assert work.calls == [1, 2]
    assert len(fake.sleeps) == 1
    assert "again" in info.value.reason


def test_metadata_changed_once_then_commit() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [MetadataChangedException("m1"), ConcurrentAppendException("a")])

    report = run(work, fake)

    assert report.status == "committed"
    assert [c.kind for c in report.conflicts] == [ConflictKind.METADATA_CHANGED, ConflictKind.APPEND]


def test_schema_change_never_replans_metadata_conflict() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [MetadataChangedException("m1")])

    with pytest.raises(ConflictFatalError):
        run(work, fake, op_class=OperationClass.SCHEMA_CHANGING)
    assert work.calls == [1]


@pytest.mark.parametrize(
    ("op_class", "retried"),
    [
        (OperationClass.BLIND_APPEND, True),
        (OperationClass.MAINTENANCE, True),
        (OperationClass.READ_MODIFY_WRITE, False),
        (OperationClass.SCHEMA_CHANGING, False),
    ],
)
def test_concurrent_write_by_operation_class(op_class: OperationClass, retried: bool) -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [ConcurrentWriteException(fixture_text("spark_4_0_concurrent_write.txt"))])

    if retried:
        assert run(work, fake, op_class=op_class).status == "committed"
    else:
        with pytest.raises(ConflictFatalError):
            run(work, fake, op_class=op_class)


def test_delta_rs_text_conflicts_are_retried() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [RuntimeError(fixture_text("rs_max_commit_attempts.txt"))])

    report = run(work, fake)

    assert report.conflicts[0].kind is ConflictKind.MAX_COMMIT_ATTEMPTS
    assert report.conflicts[0].source == "delta-rs"


def test_work_must_return_a_work_outcome() -> None:
    fake = SteppedClock()

    with pytest.raises(TypeError, match="WorkResult"):
        run(lambda n: None, fake)  # type: ignore[arg-type,return-value]


def test_keyboard_interrupt_is_not_swallowed() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [KeyboardInterrupt()])

    with pytest.raises(KeyboardInterrupt):
        run(work, fake)


def test_errors_pickle_with_their_report() -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [ProtocolChangedException("[DELTA_PROTOCOL_CHANGED] x")])
    with pytest.raises(ConflictFatalError) as info:
        run(work, fake)

    clone = pickle.loads(pickle.dumps(info.value))

    assert isinstance(clone, ConflictFatalError)
    assert clone.report == info.value.report
    assert clone.conflict == info.value.conflict
    assert clone.reason == info.value.reason
    assert str(clone) == str(info.value)
    for error in (
        CommitLoopError(info.value.report, "boom"),
        ConflictRetriesExhaustedError(info.value.report, info.value.conflict),
    ):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error)
        assert str(again) == str(error)


class ScriptedTurns:
    """Turns that wait (on the fake clock) as scripted and record what they were asked."""

    def __init__(self, fake: SteppedClock, first: float | None, retry: float | None) -> None:
        self.fake, self.first_wait, self.retry_wait = fake, first, retry
        self.asked: list[tuple[str, int] | str] = []

    def first(self) -> float | None:
        self.asked.append("first")
        self.fake.now += self.first_wait or 0.0
        return self.first_wait

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        self.asked.append((conflict_kind, attempt))
        self.fake.now += self.retry_wait or 0.0
        return self.retry_wait


def test_turns_are_taken_before_the_first_attempt_and_a_retry_after_waiting_starts_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The writer waited for its turn, then lost a conflict and waited for the writers ahead: no backoff on
    top of that, and both waits are in the report."""
    fake = SteppedClock()
    queue = ScriptedTurns(fake, first=1.5, retry=2.5)
    work = ScriptedWork(fake, [ConcurrentAppendException("Files were added to partition [p=a]")])
    report = run(work, fake, turns=queue)
    assert queue.asked == ["first", ("APPEND", 1)]
    assert fake.sleeps == []
    first, second = report.attempts
    assert (first.turn_wait_s, first.wait_s) == (2.5, 0.0) and second.outcome == "committed"
    assert report.first_turn_wait_s == 1.5
    assert report.total_seconds == pytest.approx(
        2.0 + 2.5
    )  # two attempts of 1 s and the turn after the conflict; not the first turn
    assert any("retrying now after 2.50 s waiting for its turn" in line for line in warnings(caplog))
    again = CommitReport.from_dict(report.to_dict())
    assert (again.first_turn_wait_s, again.attempts[0].turn_wait_s) == (1.5, 2.5)


@pytest.mark.parametrize("answer", [0.0, None], ids=["nobody ahead", "no store"])
def test_with_nobody_ahead_or_no_store_a_retry_backs_off(answer: float | None) -> None:
    fake = SteppedClock()
    work = ScriptedWork(fake, [ConcurrentAppendException("Files were added to partition [p=a]")])
    report = run(work, fake, turns=ScriptedTurns(fake, first=answer, retry=answer))
    assert len(fake.sleeps) == 1 and fake.sleeps[0] > 0
    assert report.attempts[0].turn_wait_s == 0.0 and report.attempts[0].wait_s == fake.sleeps[0]
    assert report.first_turn_wait_s == 0.0
