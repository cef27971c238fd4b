"""Every error the Airflow-free core raises, in one module; it imports neither Airflow nor pyspark.

The Airflow face (:mod:`airflow_provider_deltacc.exceptions`) re-exports all of them beside its own
``DeltaCC*`` errors, which the operators raise and Airflow's retry policy decides on. Hierarchy::

    InputError (ValueError)           bad input; nothing was written, retrying the same input cannot help
     ├ SpecError                      ... a field of the job spec (its dotted path, the value, the fix)
     ├ UnsafeStorageError             ... unsafe storage and no storage guard in the spec
     └ ViewInputError                 ... a query parameter of the conflicts views (answered with 400)
    LiteralError (ValueError)         a value that cannot be written as a literal of its column's type
    SqlTextError (ValueError)         text that cannot be read as SQL (an unterminated literal or comment)
    UserCodeError                     raised inside an attempt by the user's own code: never a conflict
     └ SourceFunctionError            ... by a source function, with its own frames of the traceback
    CommitLoopError                   the commit loop's work failed with something that is not a conflict
     └ ConflictError                  ... on a Delta conflict
        ├ ConflictFatalError          ... that must not be retried
        └ ConflictRetriesExhaustedError ... that is retryable, but attempts or time ran out
    LeaseStoreUnavailable (ConnectionError)  the lease store cannot be reached
    ExclusiveLeaseUnavailable (RuntimeError) an exclusive writer lease could not be taken
    UnguardedUnsafeWrite (ValueError)        a lease-less writer on storage that cannot exclude others
    DeltaJarsMissingError (RuntimeError)     the Delta jars for this pyspark are not in the cache
    AdvisorInputError (ValueError)           the advisor's paths or DAG files cannot be read
    TableNotFoundError (FileNotFoundError)   no Delta table where a JVM-free read looked
    UnsupportedLog                           a Delta log the provider's log reader leaves to delta-rs

Where the face turns one into its own: :class:`InputError` and :class:`UnguardedUnsafeWrite` become
``DeltaCCInputError`` (the field kept), :class:`ConflictFatalError` ``DeltaConflictFatal``,
:class:`ConflictRetriesExhaustedError` ``DeltaConflictRetryable``, :class:`ExclusiveLeaseUnavailable`
``DeltaUnsafeStorageError``, and :class:`LeaseStoreUnavailable` of a maintenance task
``DeltaCCInfrastructureError``.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from airflow_provider_deltacc.contract.commit_report import CommitReport
    from airflow_provider_deltacc.contract.conflict import Conflict

_VALUE_LIMIT = 200
#: The longest tail of a source function's traceback an error carries.
_TRACEBACK_LIMIT = 1500


def short_repr(value: Any) -> str:
    """Return ``repr(value)`` cut to a length that fits in one log line.

    :param value: any value.
    """
    text = repr(value)
    return text if len(text) <= _VALUE_LIMIT else text[: _VALUE_LIMIT - 3] + "..."


def refuse_renamed(given: Mapping[str, Any], renamed: Mapping[str, str], *, owner: str) -> None:
    """Fail when ``given`` holds a name an argument had before it was renamed.

    Here rather than in the face's ``api_support`` because :mod:`airflow_provider_deltacc.conflict_safe`,
    which ships to the Spark driver without the face, refuses a renamed argument too. Nothing was released
    under the old names, so one is a mistake to fix in the DAG, not a spelling to keep reading; Airflow alone
    would refuse it as an unknown argument without saying what it is called now.
    ``default_args`` are not read: Airflow passes an operator only the keys it takes, and a DAG's
    ``default_args`` may hold another operator's argument of that name.

    :param given: the caller's keyword arguments.
    :param renamed: old name -> new name.
    :param owner: who takes the arguments (a class or task group factory), for the message.
    :raises TypeError: naming the old name, the value given and the new name.
    """
    for old, new in renamed.items():
        if old in given:
            value = short_repr(given[old])
            raise TypeError(f"{owner} got {old}={value}; it is called {new}: pass {new}={value}")


class InputError(ValueError):
    """The job's input is wrong; nothing was written and retrying the same input cannot help.

    :param field: the dotted path of the offending field, e.g. ``options.partition_pin``.
    :param value: the offending value.
    :param message: what is wrong and how to fix it.
    """

    def __init__(self, field: str, value: Any, message: str) -> None:
        super().__init__(f"{field}={short_repr(value)}: {message}")
        self.field = field
        self.value = value
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.field, self.value, self.message)


class SpecError(InputError):
    """The job spec is invalid: ``str(error)`` names the field, the bad value and the fix.

    :param field: the dotted path of the field, e.g. ``options.retention_hours``.
    :param value: the bad value.
    :param message: what is wrong and how to fix it.
    """


class UnsafeStorageError(InputError):
    """The table's storage cannot exclude concurrent writers and the spec carries no ``storage_guard``."""


class ViewInputError(InputError):
    """A query parameter of the Delta conflicts views that cannot be read; the view answers 400 with it.

    :param field: the parameter, e.g. ``since``.
    :param value: its value.
    :param message: what is wrong and the form it takes.
    """


class LiteralError(ValueError):
    """A value cannot be written as a literal of the requested type."""


class SqlTextError(ValueError):
    """The text cannot be read as SQL: an unterminated string, identifier or comment."""


class UserCodeError(Exception):
    """Raised inside an attempt by the user's own code (a source function): the user's, never a conflict.

    The commit loop does not classify it, so a message that happens to name a Delta exception is not taken
    for one; the loop stops at once and the failure goes to Airflow's retries.
    """


class SourceFunctionError(UserCodeError):
    """The source function raised: its name, the exception and the function's own frames of the traceback.

    :param name: the function's name.
    :param error: what it raised.
    """

    def __init__(self, name: str, error: BaseException) -> None:
        frames = traceback.format_exception(type(error), error, error.__traceback__)
        # Drop the frame of SourceFunction.__call__: the traceback starts in the user's function.
        text = "".join(frames[:1] + frames[2:]) if len(frames) > 2 else "".join(frames)
        if len(text) > _TRACEBACK_LIMIT:
            text = "...\n" + text[-_TRACEBACK_LIMIT:]
        super().__init__(f"source function {name} raised {type(error).__name__}: {error}\n{text}")
        self.name = name
        self.error_type = type(error).__name__

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt_source_function_error, (type(self), str(self), self.name, self.error_type)


def _rebuilt_source_function_error(
    cls: type[SourceFunctionError], message: str, name: str, error_type: str
) -> Any:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.name, error.error_type = name, error_type
    return error


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


class LeaseStoreUnavailable(ConnectionError):
    """The lease store cannot be reached (a server that is down, refuses connections or dropped ours).

    Writers go on without a lease, with a warning; maintenance must not run unguarded, so the operators
    turn this into an infrastructure failure that Airflow retries.

    :param store: the store, as it may be logged (a URL with its password hidden).
    :param cause: what the driver raised.
    """

    def __init__(self, store: str, cause: BaseException) -> None:
        detail = str(getattr(cause, "orig", None) or cause).strip().splitlines()
        super().__init__(
            f"the lease store {store} cannot be reached ({type(cause).__name__}: "
            f"{detail[0] if detail else 'no detail'})"
        )
        self.store = store


class BlockingLease(Protocol):
    """A live lease that kept a table, as an error names it (the lease store's
    :class:`~airflow_provider_deltacc.leases.lease.Lease` is one)."""

    def describe(self) -> str:
        """``MERGE lease on date=2026-11-20 by ingest.merge_orders``, for logs and reasons."""
        ...


class ExclusiveLeaseUnavailable(RuntimeError):
    """An exclusive writer lease could not be taken: the store is unreachable, or others kept the table.

    :param message: what happened.
    :param blocking: the live leases that kept the table (empty when the store failed).
    """

    def __init__(self, message: str, blocking: Sequence[BlockingLease] = ()) -> None:
        super().__init__(message)
        self.blocking = list(blocking)


class LeaseLapsedError(RuntimeError):
    """The lease that keeps this write safe lapsed before the commit: the lease store may already have let
    another writer (or VACUUM) in, so the attempt is abandoned before it commits. An infrastructure failure:
    the next try takes the lease again.

    :param table: the table.
    :param lease: the lease, as it may be logged (kind, holder, id).
    :param ttl_s: the lease's TTL.
    :param why: what the heartbeat found (expired, or not renewed within the TTL).
    """

    def __init__(self, table: str, lease: str, ttl_s: float, why: str) -> None:
        super().__init__(
            f"the lease that keeps writes to {table} safe lapsed before the commit: {lease} ({why}; "
            f"lease TTL {ttl_s:.0f} s); nothing was committed by this attempt. Airflow retries the task; "
            "if the lease store is often slow, raise lease_ttl"
        )
        self.table = table
        self.lease = lease
        self.ttl_s = ttl_s
        self.why = why

    @property
    def unreachable(self) -> str:
        """What became unavailable, for the job's report."""
        return f"the lease store (lease {self.lease} on {self.table} lapsed, TTL {self.ttl_s:.0f} s)"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.table, self.lease, self.ttl_s, self.why)


class UnguardedUnsafeWrite(ValueError):
    """A writer that takes no lease (``use_write_lease=False``) on storage that cannot exclude others."""


class DeltaJarsMissingError(RuntimeError):
    """The Delta jars for this pyspark are not in the cache."""


class AdvisorInputError(ValueError):
    """A path that is not there, or DAG files that do not import."""


class TableNotFoundError(FileNotFoundError):
    """There is no Delta table at the location (its ``_delta_log`` holds no commit); named like delta-rs's
    error, which the pages and logs showed before the provider read logs itself."""


class UnsupportedLog(Exception):
    """The provider's log reader cannot read this table's log exactly: delta-rs reads it instead. Never
    reaches a caller of :func:`airflow_provider_deltacc.delta_log.log_reader.log_state`.

    :param reason: why, for the debug log.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
