"""Every exception of the provider, in one place.

The operators, sensors and hooks raise the ``DeltaCC*``/``Delta*`` errors defined here, and
:mod:`airflow_provider_deltacc.retries.policy` decides on them::

    DeltaCCError (AirflowException)   carries the job's report
     ├ DeltaConflictRetryable         a retryable conflict outlasted the in-job retries: Airflow retries
     ├ DeltaConflictFatal             a conflict that must not be retried: the task fails
     ├ DeltaCCInputError              bad input, naming its field and value: the task fails
     ├ DeltaCCInfrastructureError     something the task needs could not be reached: Airflow retries
     └ DeltaUnsafeStorageError        unsafe storage, and the writer could not make sure it was alone
    DeltaConflictWarning (UserWarning)  at parse time: writers set up so that they can fail, or lose files
    DeltaCCSummaryTableMissing (RuntimeError)  the conflicts page's table: `airflow db migrate` not run

The Airflow-free core (the commit loop, the Spark job, the lease store) raises the errors of
:mod:`airflow_provider_deltacc.contract.exceptions`, which this module re-exports under the same names, so
``from airflow_provider_deltacc.exceptions import ...`` reaches every one of them; that module's docstring
says which ``DeltaCC*`` error each becomes in a task.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.contract.exceptions import (
    AdvisorInputError,
    CommitLoopError,
    ConflictError,
    ConflictFatalError,
    ConflictRetriesExhaustedError,
    DeltaJarsMissingError,
    ExclusiveLeaseUnavailable,
    InputError,
    LeaseLapsedError,
    LeaseStoreUnavailable,
    LiteralError,
    SourceFunctionError,
    SpecError,
    SqlTextError,
    TableNotFoundError,
    UnguardedUnsafeWrite,
    UnsafeStorageError,
    UnsupportedLog,
    UserCodeError,
    ViewInputError,
)

__all__ = [
    "AdvisorInputError",
    "CommitLoopError",
    "ConflictError",
    "ConflictFatalError",
    "ConflictRetriesExhaustedError",
    "DeltaCCError",
    "DeltaCCInfrastructureError",
    "DeltaCCInputError",
    "DeltaConflictFatal",
    "DeltaConflictRetryable",
    "DeltaConflictWarning",
    "DeltaJarsMissingError",
    "DeltaUnsafeStorageError",
    "ExclusiveLeaseUnavailable",
    "InputError",
    "LeaseLapsedError",
    "LeaseStoreUnavailable",
    "LiteralError",
    "SourceFunctionError",
    "SpecError",
    "SqlTextError",
    "TableNotFoundError",
    "UnguardedUnsafeWrite",
    "UnsafeStorageError",
    "UnsupportedLog",
    "UserCodeError",
    "ViewInputError",
]


class DeltaCCError(AirflowException):
    """Base class; carries the job's report (a dict) when there is one."""

    def __init__(self, message: str, *, report: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = report or {}

    @property
    def conflict(self) -> dict[str, Any] | None:
        """The last conflict the job met, as a dict (kind, table, partition, ...), if any."""
        for attempt in reversed(self.report.get("attempts") or []):
            if attempt.get("conflict"):
                return dict(attempt["conflict"])
        return None

    @property
    def table(self) -> str | None:
        return self.report.get("table")


class DeltaConflictRetryable(DeltaCCError):
    """A retryable conflict outlasted the in-job retries; an Airflow retry starts from a fresh snapshot."""


class DeltaConflictFatal(DeltaCCError):
    """A conflict that must not be retried (e.g. PROTOCOL_CHANGED, or a schema change raced another)."""


class DeltaCCInputError(DeltaCCError):
    """Bad input: a spec field, an operator argument or a connection setting. Retrying cannot help."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: Any = None,
        report: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, report=report)
        self.field = field
        self.value = value


class DeltaCCInfrastructureError(DeltaCCError):
    """Something the task needs could not be reached: a Spark Connect server or a Spark master that refuses
    connections, a lost connection to it, a driver the cluster killed, the lease store of a maintenance task.
    Airflow retries it with the task's own retry delay; configuration mistakes (a missing connection, a
    malformed URL, a wrong connection type) are :class:`DeltaCCInputError` instead.

    :param unreachable: what could not be reached, for the retry reason, e.g. ``Spark Connect server
        h:15002``.
    """

    def __init__(self, message: str, *, unreachable: str, report: dict[str, Any] | None = None) -> None:
        super().__init__(message, report=report)
        self.unreachable = unreachable

    @classmethod
    def lease_store(cls, task_id: str, store: str, detail: str) -> DeltaCCInfrastructureError:
        """A maintenance task (OPTIMIZE, VACUUM, the write-window sensor) cannot reach its lease store, so it
        cannot see the writers: it must not run unguarded.

        :param task_id: the task.
        :param store: the store as it may be logged (its password hidden).
        :param detail: what failed.
        """
        return cls(
            f"{task_id}: {detail}. Maintenance does not run without the lease store that keeps it away from "
            "the writers; Airflow retries the task",
            unreachable=f"lease store {store}",
        )


class DeltaUnsafeStorageError(DeltaCCError):
    """The table's storage cannot exclude concurrent writers (S3 without a multi-writer log store), and this
    writer could not make sure it is alone on the table: another writer or maintenance kept it past the wait,
    or the lease store was unreachable. A later try may find the table free."""


class DeltaConflictWarning(UserWarning):
    """An operator set up so that writers running at the same time on its table can fail, or lose files."""


class DeltaCCSummaryTableMissing(RuntimeError):
    """The metadata DB has no ``deltacc_report_summary``: the provider was installed and ``airflow db
    migrate`` has not run since (the Delta conflicts page answers 503 with this message)."""

    def __init__(self) -> None:
        super().__init__(
            "The metadata DB has no deltacc_report_summary table, which the Delta conflicts page adds the "
            "commit reports up in. Run `airflow db migrate` once after installing or upgrading "
            "airflow-provider-deltacc: it creates the provider's table beside Airflow's."
        )
