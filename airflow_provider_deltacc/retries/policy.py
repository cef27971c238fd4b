"""Airflow 3.3 ``retry_policy`` (AIP-105) that decides from the classified Delta conflict.

In-job retries (the OCC commit loop inside the Spark driver) absorb short races. What they could not
absorb reaches Airflow as :class:`~airflow_provider_deltacc.exceptions.DeltaConflictRetryable`; this
policy turns it into an Airflow retry with a jittered delay and a reason naming the conflict kind, the
table and the partition, so every try and why is visible in the UI. Fatal conflicts and bad input fail
at once. Infrastructure that could not be reached
(:class:`~airflow_provider_deltacc.exceptions.DeltaCCInfrastructureError`: a Spark master or Connect server
that is down, a driver the cluster killed, the lease store of a maintenance task) is retried with the task's
own retry delay and a reason naming what was unreachable. Raw Delta exceptions (or their messages) are
classified too.
"""

from __future__ import annotations

import contextlib
import random
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from airflow.sdk import RetryDecision, RetryPolicy

from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.exceptions import (
    DeltaCCError,
    DeltaCCInfrastructureError,
    DeltaCCInputError,
    DeltaConflictFatal,
    DeltaConflictRetryable,
)

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.contract.conflict import Conflict

# The classifier and the advice texts load on the first failure, not when a DAG file is parsed.

#: Where :meth:`DeltaConflictRetryPolicy.evaluate` keeps its decision on the exception, so that the operator
#: can log the decision before the try ends and Airflow, asking again, stores the very same one.
_DECISION_ATTR = "_deltacc_retry_decision"


def _advice(conflict: Conflict | None, report: dict[str, Any] | None = None) -> str:
    from airflow_provider_deltacc.occ.advice import advice_for

    if conflict is None:
        return ""
    return advice_for(conflict, pinned_columns=(report or {}).get("pinned_columns") or ())


def _where(conflict: Conflict | None, table: str | None) -> str:
    """The table as the user named it (the operator's ``table``); the name Delta's message prints
    (``delta.`file:/…` ``) only when the failure did not come from one of our jobs."""
    table = table or (conflict.table if conflict and conflict.table else None) or "unknown table"
    text = f"table {table}"
    if conflict and conflict.partition:
        text += f" partition {conflict.partition}"
    return text


def _attempts(report: dict[str, Any]) -> str:
    """``attempt 3 of 5``: the in-job attempt numbering the commit loop and the operator log too."""
    made = len(report.get("attempts") or [])
    return f"attempt {made} of {report.get('max_attempts') or made}"


def _next_try(try_number: int, max_tries: int) -> str:
    """``Airflow try 2 of 3``: Airflow's own try numbering (the UI's try list, the failure e-mail)."""
    return f"Airflow try {try_number + 1} of {max_tries + 1}"


def _last_try(try_number: int, max_tries: int) -> str:
    return f"try {try_number} of {max_tries + 1} was the last Airflow try"


class DeltaConflictRetryPolicy(RetryPolicy):
    """Retry retryable Delta conflicts with jittered exponential delays; fail fatal ones and bad input; retry
    unreachable infrastructure with the task's own delay.

    :param min_delay: delay before the first Airflow retry (before jitter).
    :param max_delay: cap on the delay.
    :param jitter: fraction of the delay that is randomised (0 = none, 1 = full jitter).
    :param default_operation_class: operation class assumed for a raw Delta exception when the failing
        task does not say (our operators do).
    """

    def __init__(
        self,
        *,
        min_delay: timedelta = timedelta(seconds=30),
        max_delay: timedelta = timedelta(minutes=10),
        jitter: float = 0.5,
        default_operation_class: OperationClass = OperationClass.READ_MODIFY_WRITE,
    ) -> None:
        if min_delay.total_seconds() < 0 or max_delay < min_delay:
            raise ValueError(
                f"DeltaConflictRetryPolicy: need 0 <= min_delay <= max_delay, got min_delay={min_delay}, "
                f"max_delay={max_delay}; raise max_delay or lower min_delay"
            )
        if not 0.0 <= jitter <= 1.0:
            raise ValueError(f"DeltaConflictRetryPolicy: jitter must be within [0, 1], got {jitter!r}")
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.jitter = jitter
        self.default_operation_class = OperationClass(default_operation_class)
        self._rng = random.Random()

    def delay_for(self, try_number: int) -> timedelta:
        """Exponential in the try number, capped, with the configured share of it randomised."""
        fixed, ceiling = self.delay_range(try_number)
        return timedelta(seconds=round(fixed + self._rng.uniform(0.0, ceiling - fixed), 3))

    def delay_range(self, try_number: int) -> tuple[float, float]:
        """The shortest and longest delay, in seconds, after try ``try_number`` failed on a conflict:
        ``c * (1 - jitter)`` to ``c``, where ``c = min_delay * 2 ** (try_number - 1)``, at most ``max_delay``.

        :param try_number: the try that failed (1 for the first).
        """
        ceiling = min(
            self.max_delay.total_seconds(), self.min_delay.total_seconds() * 2 ** max(0, try_number - 1)
        )
        return ceiling * (1.0 - self.jitter), ceiling

    def evaluate(
        self,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Context | None = None,
    ) -> RetryDecision:
        """Decide from the exception; see the class docstring.

        The decision is kept on the exception: asked again for the same try (the operator asks first, to log
        it at the top of the failure; then Airflow asks), the policy answers the same, delay included.
        """
        kept = getattr(exception, _DECISION_ATTR, None)
        if kept is not None and kept[0] == try_number:
            return cast("RetryDecision", kept[1])
        decision = self._evaluate(exception, try_number, max_tries, context)
        with contextlib.suppress(AttributeError):  # an exception type with __slots__: decided again
            setattr(exception, _DECISION_ATTR, (try_number, decision))
        return decision

    def _evaluate(
        self, exception: BaseException, try_number: int, max_tries: int, context: Context | None
    ) -> RetryDecision:
        if isinstance(exception, DeltaCCInputError):
            return RetryDecision.fail(reason=f"bad input, retrying cannot help: {exception}")
        if isinstance(exception, DeltaCCInfrastructureError):
            return self._retry_infrastructure(exception, try_number, max_tries)
        if isinstance(exception, DeltaCCError):
            return self._decide_on_job_failure(exception, try_number, max_tries)
        from airflow_provider_deltacc.occ.classifier import classify
        from airflow_provider_deltacc.occ.decisions import decide_conflict

        conflict = classify(exception)
        if conflict is None:
            return RetryDecision.default()
        op_class = self._operation_class(context)
        verdict = decide_conflict(conflict.kind, op_class, owns_txn_identity=False)
        if not verdict.retry:
            return RetryDecision.fail(reason=self._fatal_reason(conflict, None, verdict.reason))
        return self._retry(conflict, None, None, try_number, max_tries, "raised outside the commit loop")

    def decide_message(self, message: str, try_number: int = 1, max_tries: int = 1) -> RetryDecision:
        """Decide from a Delta error message alone (for example one copied from a log)."""
        return self.evaluate(_DeltaMessage(message), try_number, max_tries)

    def _decide_on_job_failure(self, exc: DeltaCCError, try_number: int, max_tries: int) -> RetryDecision:
        from airflow_provider_deltacc.contract.conflict import Conflict

        conflict = Conflict.from_dict(exc.conflict) if exc.conflict else None
        if isinstance(exc, DeltaConflictFatal):
            return RetryDecision.fail(reason=self._fatal_reason(conflict, exc.table, str(exc), exc.report))
        if isinstance(exc, DeltaConflictRetryable):
            why = f"in-job retries exhausted at {_attempts(exc.report)}"
            return self._retry(conflict, exc.table, exc.report, try_number, max_tries, why)
        return RetryDecision.default()

    def _retry(
        self,
        conflict: Conflict | None,
        table: str | None,
        report: dict[str, Any] | None,
        try_number: int,
        max_tries: int,
        why: str,
    ) -> RetryDecision:
        kind = conflict.kind.name if conflict else "conflict"
        head = f"Delta {kind} conflict on {_where(conflict, table)}: {why}"
        advice = _advice(conflict, report)
        if try_number > max_tries:
            # Airflow fails the task (no retries left); the reason still says why, for the UI and the log.
            reason = f"{head}; {_last_try(try_number, max_tries)}. {advice}".strip()
            return RetryDecision(reason=reason)
        delay = self.delay_for(try_number)
        reason = (
            f"{head}; {_next_try(try_number, max_tries)} starts in {delay.total_seconds():.0f} s from a "
            f"fresh snapshot. {advice}"
        ).strip()
        return RetryDecision.retry(delay=delay, reason=reason)

    @staticmethod
    def _retry_infrastructure(
        exc: DeltaCCInfrastructureError, try_number: int, max_tries: int
    ) -> RetryDecision:
        """Something the task needs was unreachable (a Spark master or Connect server, a killed driver, the
        lease store of a maintenance task): Airflow retries with the task's own retry delay."""
        if try_number > max_tries:
            return RetryDecision(
                reason=f"{exc.unreachable} unreachable: {_last_try(try_number, max_tries)}. {exc}"
            )
        return RetryDecision.retry(
            delay=None,  # the task's own retry_delay (and retry_exponential_backoff)
            reason=(
                f"{exc.unreachable} unreachable: {_next_try(try_number, max_tries)} starts after the task's "
                f"retry delay. {exc}"
            ),
        )

    @staticmethod
    def _fatal_reason(
        conflict: Conflict | None, table: str | None, why: str, report: dict[str, Any] | None = None
    ) -> str:
        kind = conflict.kind.name if conflict else "conflict"
        from airflow_provider_deltacc.contract.conflict import ConflictKind

        advice = _advice(conflict, report)
        if conflict and conflict.kind is ConflictKind.PROTOCOL_CHANGED and conflict.create_race:
            advice = "Create the table once, before concurrent writers start."
        return f"Delta {kind} conflict on {_where(conflict, table)} is not retryable: {why}. {advice}".strip()

    def _operation_class(self, context: Context | None) -> OperationClass:
        task = context.get("task") if context else None
        op_class = getattr(task, "operation_class", None)
        return OperationClass(op_class) if op_class else self.default_operation_class

    def serialize(self) -> dict[str, Any]:
        return {
            "__type": "DeltaConflictRetryPolicy",
            "min_delay": self.min_delay.total_seconds(),
            "max_delay": self.max_delay.total_seconds(),
            "jitter": self.jitter,
            "default_operation_class": self.default_operation_class.value,
        }

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> DeltaConflictRetryPolicy:
        return cls(
            min_delay=timedelta(seconds=data["min_delay"]),
            max_delay=timedelta(seconds=data["max_delay"]),
            jitter=data["jitter"],
            default_operation_class=OperationClass(data["default_operation_class"]),
        )


class _DeltaMessage(Exception):
    """Wraps a bare message so the classifier's text path sees it."""
