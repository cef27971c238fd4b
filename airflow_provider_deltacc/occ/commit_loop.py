"""Run a Delta write until it commits, retrying classified conflicts with bounded, jittered backoff."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

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
from airflow_provider_deltacc.occ.kinds import Conflict, ConflictKind
from airflow_provider_deltacc.occ.policy import CommitRetryPolicy
from airflow_provider_deltacc.occ.report import AttemptRecord, CommitReport, ReportStatus
from airflow_provider_deltacc.occ.work_result import WorkResult

log = logging.getLogger(__name__)

Work = Callable[[int], WorkResult]


class Turns(Protocol):
    """A writer's place among the writers of its table (see ``windows/admission.py``)."""

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
    out = logger if logger is not None else log
    report = CommitReport(
        operation=operation,
        table=table,
        txn_app_id=txn_app_id,
        txn_version=txn_version,
        max_attempts=policy.max_attempts,
        pinned_columns=list(pinned_columns),
    )
    if turns is not None:
        report.admission_wait_s = turns.first() or 0.0
    loop_start = clock()
    epoch_start = time.time()
    metadata_replans = 0
    attempt = 0
    while True:
        attempt += 1
        attempt_start = clock()
        started_at = epoch_start + (attempt_start - loop_start)
        try:
            outcome = work(attempt)
        except Exception as exc:
            attempt_end = clock()
            duration = attempt_end - attempt_start
            elapsed = attempt_end - loop_start
            conflict = None if isinstance(exc, UserCodeError) else classify(exc)
            if conflict is None:
                report.attempts.append(
                    AttemptRecord(
                        attempt, started_at, duration, "error", exception=_describe(exc), wasted_s=duration
                    )
                )
                _finish(report, "error", clock() - loop_start)
                raise CommitLoopError(
                    report, f"{operation} on {table} failed on attempt {attempt}: {_describe(exc)}"
                ) from exc

            decision = decide_conflict(
                conflict.kind,
                op_class,
                owns_txn_identity=owns_txn_identity,
                metadata_replans_used=metadata_replans,
            )
            record = AttemptRecord(
                attempt, started_at, duration, "conflict", conflict, _describe(exc), wasted_s=duration
            )
            if not decision.retry:
                report.attempts.append(record)
                _finish(report, "conflict_fatal", clock() - loop_start)
                out.warning(
                    "Delta conflict %s on table %s%s, attempt %d of %d, not retrying: %s. %s",
                    conflict.kind.name,
                    table,
                    _where(conflict),
                    attempt,
                    policy.max_attempts,
                    decision.reason,
                    advice_for(conflict, pinned_columns=pinned_columns),
                )
                raise ConflictFatalError(report, conflict, decision.reason) from exc

            stop = policy.stop_reason(attempt, elapsed)
            if stop is not None:
                report.attempts.append(record)
                _finish(report, "conflict_exhausted", clock() - loop_start)
                out.warning(
                    "Delta conflict %s on table %s%s, attempt %d of %d, giving up: %s. %s",
                    conflict.kind.name,
                    table,
                    _where(conflict),
                    attempt,
                    policy.max_attempts,
                    stop,
                    advice_for(conflict, pinned_columns=pinned_columns),
                )
                raise ConflictRetriesExhaustedError(report, conflict) from exc

            if conflict.kind is ConflictKind.METADATA_CHANGED:
                metadata_replans += 1
            queued = turns.retry(conflict.kind.name, attempt) if turns is not None else None
            # After waiting for the writers ahead, retry at once; otherwise back off, never past the total
            # timeout (an attempt may still start right at it).
            wait = 0.0 if queued else min(policy.wait_for(attempt, rng), policy.total_timeout_s - elapsed)
            report.attempts.append(
                AttemptRecord(
                    attempt,
                    started_at,
                    duration,
                    "conflict",
                    conflict,
                    _describe(exc),
                    wait,
                    duration,
                    queue_s=queued or 0.0,
                )
            )
            out.warning(
                "Delta conflict %s on table %s%s, attempt %d of %d, retrying %s. %s",
                conflict.kind.name,
                table,
                _where(conflict),
                attempt,
                policy.max_attempts,
                f"now after {queued:.2f} s in the table's queue" if queued else f"in {wait:.2f} s",
                advice_for(conflict, pinned_columns=pinned_columns),
            )
            if wait:
                sleep(wait)
            continue

        if not isinstance(outcome, WorkResult):
            raise TypeError(f"work must return a WorkResult, got {type(outcome).__name__}")
        duration = clock() - attempt_start
        skipped = outcome.skipped_duplicate
        report.attempts.append(
            AttemptRecord(attempt, started_at, duration, "skipped_duplicate" if skipped else "committed")
        )
        report.table_version = outcome.table_version
        report.skipped_duplicate = skipped
        report.metrics = dict(outcome.metrics)
        _finish(report, "skipped_duplicate" if skipped else "committed", clock() - loop_start)
        out.info("%s", report.summary_line())
        return report


def _finish(report: CommitReport, status: ReportStatus, total_seconds: float) -> None:
    report.status = status
    report.total_seconds = total_seconds


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
