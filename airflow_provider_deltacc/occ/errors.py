"""Exceptions the commit loop raises; each carries the :class:`CommitReport` of the failed operation.

Hierarchy (catch the most specific first)::

    UserCodeError                     raised inside an attempt by the user's own code: never a conflict
    CommitLoopError                   the work failed with something that is not a conflict
     └ ConflictError                  the work failed on a Delta conflict
        ├ ConflictFatalError          ... that must not be retried (the decision says no)
        └ ConflictRetriesExhaustedError ... that is retryable, but attempts or time ran out
"""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc.occ.kinds import Conflict
from airflow_provider_deltacc.occ.report import CommitReport


class UserCodeError(Exception):
    """Raised inside an attempt by the user's own code (a source function): the user's, never a conflict.

    The commit loop does not classify it, so a message that happens to name a Delta exception is not taken
    for one; the loop stops at once and the failure goes to Airflow's retries.
    """


class CommitLoopError(Exception):
    """The commit loop stopped with an error; the original exception is ``__cause__``.

    :param report: the report of every attempt, its status set.
    :param message: what went wrong.
    """

    def __init__(self, report: CommitReport, message: str) -> None:
        super().__init__(message)
        self.report = report

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.report, str(self))


class ConflictError(CommitLoopError):
    """The commit loop stopped on a Delta conflict.

    :param report: the report of every attempt.
    :param conflict: the last conflict.
    :param message: what went wrong.
    """

    def __init__(self, report: CommitReport, conflict: Conflict, message: str) -> None:
        super().__init__(report, message)
        self.conflict = conflict

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.report, self.conflict, str(self))


class ConflictFatalError(ConflictError):
    """A conflict that must not be retried (e.g. PROTOCOL_CHANGED); fail the task without retrying.

    :param report: the report of every attempt.
    :param conflict: the conflict.
    :param reason: why it is not retried.
    """

    def __init__(self, report: CommitReport, conflict: Conflict, reason: str) -> None:
        super().__init__(
            report,
            conflict,
            f"{report.operation} on {report.table}: {conflict.summary()} is not retried: {reason}",
        )
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.report, self.conflict, self.reason)


class ConflictRetriesExhaustedError(ConflictError):
    """A retryable conflict outlasted the in-job retry policy; a later (Airflow) retry may succeed.

    :param report: the report of every attempt.
    :param conflict: the last conflict.
    """

    def __init__(self, report: CommitReport, conflict: Conflict) -> None:
        super().__init__(
            report,
            conflict,
            f"{report.operation} on {report.table}: still conflicting after {len(report.attempts)} "
            f"attempt(s), last {conflict.summary()}",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.report, self.conflict)
