"""Run a Delta write until it commits, retrying classified conflicts with bounded, jittered backoff.

Each decision is made in one place: whether a failed attempt lost a conflict (the classifier), whether the
conflict may be retried (:func:`~airflow_provider_deltacc.occ.decisions.decide_conflict`), whether
another attempt may start
(:meth:`~airflow_provider_deltacc.contract.commit_retry.CommitRetryPolicy.stop_reason`), and how long to wait
before it (``_CommitLoop._wait_to_retry``); every conflict is logged by one line
(``_CommitLoop._log_conflict``).

Why not tenacity's ``Retrying`` (the policy's arithmetic is tenacity's strategies): the loop measures time on
its own clock (tests pass a fake one; tenacity's stop reads ``time.monotonic``), and after a lost conflict it
may first wait for the writers ahead in the table's turns, which must happen only when another attempt
follows, while tenacity computes the wait before it asks whether to stop.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from airflow_provider_deltacc.contract.commit_report import AttemptRecord, CommitReport, ReportStatus
from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind
from airflow_provider_deltacc.contract.exceptions import (
    CommitLoopError,
    ConflictFatalError,
    ConflictRetriesExhaustedError,
    UserCodeError,
)
from airflow_provider_deltacc.occ.advice import advice_for
from airflow_provider_deltacc.occ.classifier import classify
from airflow_provider_deltacc.occ.decisions import OperationClass, decide_conflict
from airflow_provider_deltacc.occ.extract import summarize_message
from airflow_provider_deltacc.occ.work_result import WorkResult

log = logging.getLogger(__name__)

Work = Callable[[int], WorkResult]


class Turns(Protocol):
    """A writer's place among the writers of its table (see ``turns/lease_turns.py``)."""

    def first(self) -> float | None:
        """Wait, before the first attempt, for the writers ahead this one will conflict with; the seconds
        waited, or None when nobody could be asked."""
        ...

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        """After a lost conflict, wait for the writers ahead this one can conflict with; the seconds waited
        (the retry then starts at once), 0 when nobody was ahead, or None when nobody could be asked (0 and
        None: the policy's backoff)."""
        ...


def run_commit_loop(
    work: Work,
    *,
    operation: str,
    table: str,
    op_class: OperationClass,
    policy: CommitRetryPolicy,
    owns_txn_identity: bool,
    txn_app_id: str | None = None,
    txn_version: int | None = None,
    pinned_columns: Sequence[str] = (),
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: random.Random | None = None,
    turns: Turns | None = None,
) -> CommitReport:
    """Call ``work`` until it commits, a conflict is not worth retrying, or the policy runs out.

    Each attempt calls ``work(attempt_number)`` afresh; the callable must re-read the table snapshot and
    redo the whole read-modify-write, because a conflict means its plan is stale.

    :param work: the attempt; returns a :class:`WorkResult` or raises.
    :param operation: the operation name for logs and the report, e.g. ``MERGE``.
    :param table: the target table as the user named it.
    :param op_class: what the operation does, for the retry decision.
    :param policy: attempts, backoff and total timeout.
    :param owns_txn_identity: True when the work writes with a txn app id/version this provider owns.
    :param txn_app_id: the idempotent-write app id, recorded in the report.
    :param txn_version: the idempotent-write version, recorded in the report.
    :param pinned_columns: the partition columns the work pins its condition to, recorded in the report and
        used to fit the advice (a pinned write that still conflicts is not told to pin).
    :param logger: where to log; this module's logger when None.
    :param sleep: the sleep function (tests pass a fake).
    :param clock: a monotonic clock in seconds (tests pass a fake).
    :param rng: the random source for jitter.
    :param turns: the writer's place among the writers of its table (:class:`Turns`); None races them and
        backs off by the policy alone.
    :raises CommitLoopError: the work raised something that is not a conflict (a
        :class:`~airflow_provider_deltacc.contract.exceptions.UserCodeError` never is one).
    :raises ConflictFatalError: a conflict that must not be retried.
    :raises ConflictRetriesExhaustedError: a retryable conflict outlasted the policy.
    """
    report = CommitReport(
        operation=operation,
        table=table,
        txn_app_id=txn_app_id,
        txn_version=txn_version,
        max_attempts=policy.max_attempts,
        pinned_columns=list(pinned_columns),
    )
    if turns is not None:
        report.first_turn_wait_s = turns.first() or 0.0
    loop = _CommitLoop(
        report=report,
        op_class=op_class,
        policy=policy,
        owns_txn_identity=owns_txn_identity,
        pinned_columns=pinned_columns,
        out=logger if logger is not None else log,
        sleep=sleep,
        clock=clock,
        rng=rng,
        turns=turns,
    )
    return loop.run(work)


@dataclass(frozen=True)
class _FailedAttempt:
    """An attempt whose work raised.

    :param number: the 1-based attempt number.
    :param started_at: when it started, in seconds since the epoch.
    :param duration: how long it ran.
    :param elapsed: the loop's seconds from the first attempt's start to this one's end.
    :param error: what the work raised.
    :param description: ``"<type>: <first line>"`` of the error.
    """

    number: int
    started_at: float
    duration: float
    elapsed: float
    error: Exception
    description: str

    def record(
        self, conflict: Conflict | None = None, *, wait: float = 0.0, turn_wait: float = 0.0
    ) -> AttemptRecord:
        """The attempt for the report: a conflict when ``conflict`` is given, else an error.

        :param conflict: the conflict it lost, if it lost one.
        :param wait: the backoff slept after it.
        :param turn_wait: the wait for its turn after it.
        """
        return AttemptRecord(
            self.number,
            self.started_at,
            self.duration,
            "conflict" if conflict is not None else "error",
            conflict,
            self.description,
            wait,
            self.duration,
            turn_wait_s=turn_wait,
        )


@dataclass(kw_only=True)
class _CommitLoop:
    """One run of the commit loop: its report, its clock, and what it remembers between attempts.

    :param report: the report to fill; its operation, table and attempt limit are set.
    :param op_class: what the operation does, for the retry decision.
    :param policy: attempts, backoff and total timeout.
    :param owns_txn_identity: True when the work writes with a txn identity this provider owns.
    :param pinned_columns: the partition columns the work pins its condition to, for the advice.
    :param out: where to log.
    :param sleep: the sleep function.
    :param clock: a monotonic clock in seconds.
    :param rng: the random source for jitter.
    :param turns: the writer's place among the writers of its table, or None.
    """

    report: CommitReport
    op_class: OperationClass
    policy: CommitRetryPolicy
    owns_txn_identity: bool
    pinned_columns: Sequence[str]
    out: logging.Logger | logging.LoggerAdapter[Any]
    sleep: Callable[[float], object]
    clock: Callable[[], float]
    rng: random.Random | None
    turns: Turns | None
    #: The first attempt's start, on the loop's clock and since the epoch.
    start: float = field(init=False)
    epoch_start: float = field(init=False)
    #: METADATA_CHANGED conflicts re-planned so far.
    metadata_replans: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.start = self.clock()
        self.epoch_start = time.time()

    def run(self, work: Work) -> CommitReport:
        """Call ``work`` until it commits; raise the loop's error when it stops otherwise.

        :param work: the attempt.
        """
        attempt = 0
        while True:
            attempt += 1
            attempt_start = self.clock()
            try:
                outcome = work(attempt)
            except Exception as exc:
                self._after_failure(self._failed(attempt, attempt_start, exc))
                continue
            return self._succeeded(attempt, attempt_start, outcome)

    def _failed(self, attempt: int, attempt_start: float, error: Exception) -> _FailedAttempt:
        """Attempt ``attempt``, whose work raised ``error`` just now.

        :param attempt: its number.
        :param attempt_start: when it started, on the loop's clock.
        :param error: what the work raised.
        """
        attempt_end = self.clock()
        return _FailedAttempt(
            attempt,
            self._epoch(attempt_start),
            attempt_end - attempt_start,
            attempt_end - self.start,
            error,
            _describe(error),
        )

    def _after_failure(self, failed: _FailedAttempt) -> None:
        """Raise the loop's error for a failed attempt, or wait until the next one may start.

        :param failed: the attempt.
        """
        conflict = None if isinstance(failed.error, UserCodeError) else classify(failed.error)
        if conflict is None:
            self.report.attempts.append(failed.record())
            self._finish("error")
            report = self.report
            raise CommitLoopError(
                report,
                f"{report.operation} on {report.table} failed on attempt {failed.number}: "
                f"{failed.description}",
            ) from failed.error
        decision = decide_conflict(
            conflict.kind,
            self.op_class,
            owns_txn_identity=self.owns_txn_identity,
            metadata_replans_used=self.metadata_replans,
        )
        if not decision.retry:
            self._stop_on(failed, conflict, "conflict_fatal", f"not retrying: {decision.reason}")
            raise ConflictFatalError(self.report, conflict, decision.reason) from failed.error
        stop = self.policy.stop_reason(failed.number, failed.elapsed)
        if stop is not None:
            self._stop_on(failed, conflict, "conflict_exhausted", f"giving up: {stop}")
            raise ConflictRetriesExhaustedError(self.report, conflict) from failed.error
        self._wait_to_retry(failed, conflict)

    def _wait_to_retry(self, failed: _FailedAttempt, conflict: Conflict) -> None:
        """Wait for the writers ahead when the turns say so, else back off by the policy.

        :param failed: the attempt that lost ``conflict``.
        :param conflict: the retryable conflict.
        """
        if conflict.kind is ConflictKind.METADATA_CHANGED:
            self.metadata_replans += 1
        turn_wait = self.turns.retry(conflict.kind.name, failed.number) if self.turns is not None else None
        # After waiting for the writers ahead, retry at once; otherwise back off, never past the total
        # timeout (an attempt may still start right at it).
        if turn_wait:
            wait = 0.0
        else:
            backoff = self.policy.wait_for(failed.number, self.rng)
            wait = min(backoff, self.policy.total_timeout_s - failed.elapsed)
        self.report.attempts.append(failed.record(conflict, wait=wait, turn_wait=turn_wait or 0.0))
        when = f"now after {turn_wait:.2f} s waiting for its turn" if turn_wait else f"in {wait:.2f} s"
        self._log_conflict(conflict, failed.number, f"retrying {when}")
        if wait:
            self.sleep(wait)

    def _stop_on(
        self, failed: _FailedAttempt, conflict: Conflict, status: ReportStatus, verdict: str
    ) -> None:
        """Record the last attempt, which lost ``conflict``, finish the report and log the verdict.

        :param failed: the attempt.
        :param conflict: the conflict that ends the loop.
        :param status: the report's status.
        :param verdict: what the loop does about it, e.g. ``giving up: attempt limit of 5 reached``.
        """
        self.report.attempts.append(failed.record(conflict))
        self._finish(status)
        self._log_conflict(conflict, failed.number, verdict)

    def _succeeded(self, attempt: int, attempt_start: float, outcome: WorkResult) -> CommitReport:
        """Record the attempt that committed (or was skipped as a duplicate) and finish the report.

        :param attempt: its number.
        :param attempt_start: when it started, on the loop's clock.
        :param outcome: what the work returned.
        """
        if not isinstance(outcome, WorkResult):
            raise TypeError(f"work must return a WorkResult, got {type(outcome).__name__}")
        duration = self.clock() - attempt_start
        status: Literal["committed", "skipped_duplicate"] = (
            "skipped_duplicate" if outcome.skipped_duplicate else "committed"
        )
        self.report.attempts.append(AttemptRecord(attempt, self._epoch(attempt_start), duration, status))
        self.report.table_version = outcome.table_version
        self.report.skipped_duplicate = outcome.skipped_duplicate
        self.report.metrics = dict(outcome.metrics)
        self._finish(status)
        self.out.info("%s", self.report.summary_line())
        return self.report

    def _log_conflict(self, conflict: Conflict, attempt: int, verdict: str) -> None:
        """The one line a conflict gets: kind, table, partition if known, attempt n of m, what the loop does,
        the advice.

        :param conflict: the conflict.
        :param attempt: the attempt that lost it.
        :param verdict: what the loop does about it.
        """
        self.out.warning(
            "Delta conflict %s on table %s%s, attempt %d of %d, %s. %s",
            conflict.kind.name,
            self.report.table,
            _where(conflict),
            attempt,
            self.policy.max_attempts,
            verdict,
            advice_for(conflict, pinned_columns=self.pinned_columns),
        )

    def _finish(self, status: ReportStatus) -> None:
        self.report.status = status
        self.report.total_seconds = self.clock() - self.start

    def _epoch(self, instant: float) -> float:
        """``instant`` on the loop's clock, in seconds since the epoch."""
        return self.epoch_start + (instant - self.start)


def _where(conflict: Conflict) -> str:
    where = conflict.where()
    return f" {where}" if where else ""


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = ""
    first = summarize_message(text, limit=300).split("\n", 1)[0] if text else ""
    name = type(exc).__name__
    return f"{name}: {first}" if first else name
