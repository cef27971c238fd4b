"""Build the typed job spec from its typed parts: what the operators, the decorators and ``conflict_safe``
call (the parts come from :mod:`~airflow_provider_deltacc.contract.spec_sources` and
:mod:`~airflow_provider_deltacc.contract.spec_options`), and what the JSON form is read into (see
:mod:`~airflow_provider_deltacc.contract.spec_parse`).

Every problem raises :class:`~airflow_provider_deltacc.contract.exceptions.SpecError` naming the field, the
bad value and the fix: the same error whichever way the spec is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.exceptions import InputError, SpecError
from airflow_provider_deltacc.contract.operations import OPERATIONS
from airflow_provider_deltacc.contract.spec import (
    STORAGE_GUARDS,
    JobSpec,
    KnownSnapshot,
    OperationOptions,
    ReportTrailSpec,
    SourceSpec,
    TurnServiceSpec,
)
from airflow_provider_deltacc.contract.spec_fields import read_mapping
from airflow_provider_deltacc.contract.spec_options import OPTION_TYPES
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.txn import TxnIdentity

__all__ = [
    "check_operation",
    "check_source",
    "check_storage_guard",
    "check_table",
    "check_txn",
    "commit_retry_of",
    "job_spec",
    "txn_identity",
    "txn_of",
]

_T = TypeVar("_T")


def job_spec(
    *,
    operation: Any,
    table: Any,
    options: OperationOptions,
    source: SourceSpec | None = None,
    commit_retry: CommitRetryPolicy | None = None,
    txn: TxnIdentity | None = None,
    spark_conf: Mapping[str, Any] | None = None,
    storage_guard: str | None = None,
    report_trail: ReportTrailSpec | None = None,
    turn_service: TurnServiceSpec | None = None,
    known_snapshot: KnownSnapshot | None = None,
) -> JobSpec:
    """One job, checked as a whole: the operation, the table, and whether the parts fit the operation.

    :param operation: one of :data:`~airflow_provider_deltacc.contract.operations.OPERATIONS`.
    :param table: a path or a catalog name.
    :param options: the operation's options (its factory in
        :mod:`~airflow_provider_deltacc.contract.spec_options`).
    :param source: the source, for operations that read one.
    :param commit_retry: in-job conflict retries; None: the defaults.
    :param txn: the idempotent-write identity (see :func:`txn_identity`), or None.
    :param spark_conf: runtime Spark confs for this operation.
    :param storage_guard: ``exclusive_lease``, ``override`` or None.
    :param report_trail: the run token and report directory, or None.
    :param turn_service: where a commit loop in a Spark driver asks for its turns, or None.
    :param known_snapshot: the table's snapshot as the worker's read of its log showed it, or None.
    :raises SpecError: on the first problem found.
    """
    operation = check_operation(operation)
    table = check_table(table)
    check_txn(operation, txn, None if txn is None else txn.to_dict())
    check_source(operation, source)
    expected = OPTION_TYPES[operation]
    if not isinstance(options, expected):
        raise TypeError(f"{operation} takes {expected.__name__}, not {type(options).__name__}")
    return JobSpec(
        operation=operation,
        table=table,
        options=options,
        source=source,
        commit_retry=commit_retry if commit_retry is not None else CommitRetryPolicy(),
        txn=txn,
        spark_conf=read_mapping(
            None if spark_conf is None else dict(spark_conf), "spark_conf", values="conf"
        ),
        storage_guard=check_storage_guard(storage_guard),
        report_trail=report_trail,
        turn_service=turn_service,
        known_snapshot=known_snapshot,
    )


def check_operation(operation: Any) -> str:
    """The operation, when it is a known one.

    :param operation: the spec's ``operation``.
    :raises SpecError: naming ``operation``.
    """
    if operation not in OPERATIONS:
        raise SpecError("operation", operation, f"unknown operation; use one of {', '.join(OPERATIONS)}")
    return str(operation)


def check_table(table: Any) -> Table:
    """The table, when it is a path or a catalog name.

    :param table: the spec's ``table``.
    :raises SpecError: naming ``table``.
    """
    return _spec_error(lambda: Table.of(table))


def txn_identity(*, app_id: Any, version: Any) -> TxnIdentity:
    """The idempotent-write identity.

    :param app_id: stable per logical writer (non-empty).
    :param version: growing with each new write of the app id (a non-negative Java long).
    :raises SpecError: naming ``txn.app_id`` or ``txn.version``.
    """
    return _spec_error(lambda: TxnIdentity(app_id=app_id, version=version))


def txn_of(raw: Any) -> TxnIdentity:
    """The idempotent-write identity in its dict form, ``{"app_id": "...", "version": 7}``.

    :param raw: the dict form.
    :raises SpecError: naming ``txn`` or its field.
    """
    return _spec_error(lambda: TxnIdentity.from_dict(raw))


def check_txn(operation: str, txn: TxnIdentity | None, value: Any) -> None:
    """Refuse a transaction identity on an operation that records none.

    :param operation: a known operation.
    :param txn: the identity, or None.
    :param value: the identity as it was given, for the message.
    :raises SpecError: naming ``txn``.
    """
    if txn is not None and OPERATIONS[operation].is_maintenance:
        raise SpecError(
            "txn", value, f"{operation} records no transaction identity (it is idempotent); remove txn"
        )


def check_source(operation: str, source: Any) -> None:
    """Refuse a missing source where the operation needs one, and a source where it reads none.

    :param operation: a known operation.
    :param source: the source (typed, or its dict form), or None.
    :raises SpecError: naming ``source``.
    """
    if source is None:
        if OPERATIONS[operation].needs_source:
            raise SpecError(
                "source", None, f'{operation} needs a source, e.g. {{"kind": "delta", "path": ...}}'
            )
        return
    if not OPERATIONS[operation].reads_source:
        raise SpecError("source", source, f"{operation} reads no source; remove it or set it to null")


def check_storage_guard(raw: Any) -> str | None:
    """The storage guard, when it is a known one or None.

    :param raw: the spec's ``storage_guard``.
    :raises SpecError: naming ``storage_guard``.
    """
    if raw is None or raw in STORAGE_GUARDS:
        return raw
    raise SpecError(
        "storage_guard",
        raw,
        f"must be one of {', '.join(STORAGE_GUARDS)} or null (see the storage safety docs)",
    )


def commit_retry_of(raw: Any) -> CommitRetryPolicy:
    """The in-job retry policy in its dict form, e.g. ``{"max_attempts": 5}``; None: the defaults.

    :param raw: the dict form.
    :raises SpecError: naming ``commit_retry`` or its field.
    """
    name = "commit_retry"
    if raw is None:
        return CommitRetryPolicy()
    if not isinstance(raw, dict):
        raise SpecError(name, raw, 'must be an object such as {"max_attempts": 5}')
    known = CommitRetryPolicy().to_dict()
    for key, value in raw.items():
        if key not in known:
            raise SpecError(
                f"{name}.{key}", value, f"unknown field; valid fields are {', '.join(sorted(known))}"
            )
    try:
        return CommitRetryPolicy.from_dict(raw)
    except (TypeError, ValueError) as exc:
        field = next((f"{name}.{k}" for k in raw if f".{k} " in f"{exc} "), name)
        value = raw.get(field.removeprefix(f"{name}."), raw)
        raise SpecError(field, value, str(exc)) from None


def _spec_error(build: Callable[[], _T]) -> _T:
    """``build()``, its input errors raised as :class:`SpecError` (the spec's own error)."""
    try:
        return build()
    except SpecError:
        raise
    except InputError as exc:
        raise SpecError(exc.field, exc.value, exc.message) from None
