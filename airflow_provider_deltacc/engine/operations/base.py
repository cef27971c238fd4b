"""What every operation shares: the prepared form, and one tracked attempt (skip check, tag, find commit)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.operations import OperationClass, operation, operation_class
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.txn import (
    TxnIdentity,
    already_committed,
    committed_reason,
    duplicate_metrics,
)
from airflow_provider_deltacc.engine.backend import backend_for
from airflow_provider_deltacc.engine.commits import (
    USER_METADATA_CONF,
    find_tagged_commits,
    find_txn_commit,
    new_commit_tag,
)
from airflow_provider_deltacc.engine.confs import session_confs
from airflow_provider_deltacc.engine.table import TableState, read_table_state_if_exists, table_exists
from airflow_provider_deltacc.engine.txn import txn_confs
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Called with the final source DataFrame and the attempt number, just before the write; returns the
#: DataFrame to write. For instrumentation and tests (e.g. holding a job at a gate).
SourceHook = Callable[["DataFrame", int], "DataFrame"]


@dataclass(frozen=True)
class PreparedOperation:
    """A validated operation, ready for the commit loop.

    :param name: the report name, e.g. ``MERGE``.
    :param op_class: what it does, for the retry decision.
    :param work: one attempt; re-plans from a fresh snapshot every call.
    :param pinned_columns: the partition columns the write pins its condition to (none: not pinned).
    """

    name: str
    op_class: OperationClass
    work: Callable[[int], WorkResult]
    pinned_columns: tuple[str, ...] = ()


def prepared_operation(
    name: str,
    work: Callable[[int], WorkResult],
    *,
    options: Mapping[str, Any] | None = None,
    spark_conf: Mapping[str, str] | None = None,
    pinned_columns: tuple[str, ...] = (),
) -> PreparedOperation:
    """The prepared form of a job-spec operation, named and classed by the operation registry.

    :param name: the job spec's ``operation``.
    :param work: one attempt.
    :param options: the options that decide its class (``merge_schema``, a statement's ``op_class``).
    :param spark_conf: the session settings that decide its class (schema auto-merge).
    :param pinned_columns: the partition columns the write pins its condition to.
    """
    return PreparedOperation(
        operation(name).verb, operation_class(name, options, spark_conf), work, pinned_columns
    )


@dataclass
class WriteResult:
    """What a write step reports back to :func:`tracked_attempt`.

    :param metrics: extra metrics (warnings, pin values, ...), merged over the commit's own metrics.
    :param noop_reason: set when the step deliberately wrote nothing.
    """

    metrics: dict[str, Any] = field(default_factory=dict)
    noop_reason: str | None = None


#: The write step: receives the fresh snapshot (None if the table does not exist yet).
WriteStep = Callable[[TableState | None], WriteResult]


@dataclass(frozen=True)
class KnownState:
    """A snapshot the operation read moments ago (while validating), which its first attempt plans from
    instead of reading the table again. Planning only needs the table's layout and schema; Delta checks the
    commit against its own snapshot, so a commit that landed in between is caught as it would be anyway.

    :param state: the snapshot; None when the table did not exist.
    """

    state: TableState | None

    @classmethod
    def for_attempt(cls, attempt: int, state: TableState | None) -> KnownState | None:
        """The known state for attempt 1; None (read afresh) for every retry.

        :param attempt: the attempt number.
        :param state: the snapshot read while validating.
        """
        return cls(state) if attempt == 1 else None


def tracked_attempt(
    spark: SparkSession,
    table: Table,
    write: WriteStep,
    *,
    txn: TxnIdentity | None,
    txn_in_session: bool,
    may_create: bool = False,
    extra_confs: Mapping[str, str] | None = None,
    write_checks_txn: bool = False,
    known: KnownState | None = None,
) -> WorkResult:
    """Run one attempt: read a fresh snapshot, skip a committed duplicate, write, find what was committed.

    :param spark: the operation's own session (see :func:`~.confs.isolated_session`).
    :param table: the target table.
    :param write: the write step.
    :param txn: the idempotent-write identity, or None.
    :param txn_in_session: True to carry ``txn`` in session confs (MERGE/UPDATE/DELETE/SQL); False when the
        write step passes it as writer options itself.
    :param may_create: the write step may create the table, so a missing table is not an error.
    :param extra_confs: further session confs for the write step only.
    :param write_checks_txn: the write step's Delta command skips itself when ``txn`` is already recorded
        (MERGE, UPDATE, DELETE and DataFrame writes do; arbitrary SQL may not). Then the snapshot read here
        leaves out the recorded txn versions: reading them is a Spark job over the table state, which Delta
        repeats on its own snapshot, and a duplicate is reported from the state after the write instead.
    :param known: a snapshot to plan from instead of reading one (see :class:`KnownState`); ignored when the
        attempt must check recorded txn versions itself and the worker's read of the log did not already
        show ``txn`` unrecorded in it (``TableState.txn_unrecorded``).
    """
    started_at = time.time()
    app_ids = (txn.app_id,) if txn else ()
    checks_txn_here = _checks_txn_before_write(txn, write_checks_txn=write_checks_txn, known=known)
    if known is not None and not checks_txn_here:
        before = known.state
    else:
        before = read_table_state_if_exists(spark, table, app_ids if checks_txn_here else ())
    if before is None and not may_create:
        raise InputError("table", table.name, "the table disappeared or is not a Delta table")
    if before is not None and txn is not None and checks_txn_here:
        duplicate = _duplicate_before_write(spark, table, txn, before)
        if duplicate is not None:
            return duplicate
    tag, result = _tagged_write(
        spark, write, before, txn=txn if txn_in_session else None, extra_confs=extra_confs
    )
    return _what_was_committed(spark, table, txn, before, tag, result, started_at)


def _checks_txn_before_write(
    txn: TxnIdentity | None, *, write_checks_txn: bool, known: KnownState | None
) -> bool:
    """Whether the attempt reads the recorded txn versions before writing, to skip a committed duplicate
    itself: not when the write step's Delta command checks ``txn``, nor when the worker's read of the log
    already showed ``txn`` unrecorded in the known snapshot (see :func:`tracked_attempt`).

    :param txn: the idempotent-write identity, or None.
    :param write_checks_txn: the write step's Delta command skips itself when ``txn`` is already recorded.
    :param known: the snapshot the attempt may plan from.
    """
    return (
        txn is not None
        and not write_checks_txn
        and not (known is not None and known.state is not None and known.state.txn_unrecorded)
    )


def _duplicate_before_write(
    spark: SparkSession, table: Table, txn: TxnIdentity, before: TableState
) -> WorkResult | None:
    """The skipped duplicate when the snapshot before the write already records ``txn``; else None.

    :param spark: the operation's session.
    :param table: the target table.
    :param txn: the idempotent-write identity.
    :param before: the snapshot, read with ``txn``'s recorded version.
    """
    recorded = before.recorded_txn_version(txn.app_id)
    if not already_committed(recorded, txn):
        return None
    return WorkResult(
        table_version=before.version,
        skipped_duplicate=True,
        metrics=_duplicate_metrics(
            spark,
            table,
            txn,
            recorded,
            before.version,
            committed_reason(txn, recorded),
        ),
    )


def _tagged_write(
    spark: SparkSession,
    write: WriteStep,
    before: TableState | None,
    *,
    txn: TxnIdentity | None,
    extra_confs: Mapping[str, str] | None,
) -> tuple[str, WriteResult]:
    """Run the write step with a new commit tag in the session (and ``txn`` in its confs, when given), so
    that its commits can be found afterwards; return the tag and what the step reported.

    :param spark: the operation's session.
    :param write: the write step.
    :param before: the snapshot it plans from.
    :param txn: the identity to carry in session confs, or None when the write step passes it itself.
    :param extra_confs: further session confs for the write step only.
    """
    tag = new_commit_tag()
    confs = {USER_METADATA_CONF: tag, **(extra_confs or {}), **txn_confs(txn)}
    backend_for(spark).forget_last_commit()
    with session_confs(spark, confs):
        result = write(before)
    return tag, result


def _what_was_committed(
    spark: SparkSession,
    table: Table,
    txn: TxnIdentity | None,
    before: TableState | None,
    tag: str,
    result: WriteResult,
    started_at: float,
) -> WorkResult:
    """The attempt's result after the write: the commits it tagged; else a duplicate Delta skipped (a writer
    with the same identity committed in between); else a no-op.

    :param spark: the operation's session.
    :param table: the target table.
    :param txn: the idempotent-write identity, or None.
    :param before: the snapshot the write planned from (None: the table did not exist).
    :param tag: the commit tag the write ran with.
    :param result: what the write step reported.
    :param started_at: when the attempt started, in seconds since the epoch.
    """
    after_version = before.known_version if before is not None else -1
    # A table that existed before the write still exists; one the write may have created is looked for.
    exists_now = before is not None or table_exists(spark, table)
    commits = find_tagged_commits(spark, table, tag, after_version, started_at) if exists_now else None
    if commits is not None and commits.versions:
        metrics = {**commits.metrics, **result.metrics, "commit_versions": list(commits.versions)}
        return WorkResult(table_version=commits.versions[-1], skipped_duplicate=False, metrics=metrics)

    after = read_table_state_if_exists(spark, table, (txn.app_id,) if txn else ())
    current = after.version if after is not None else None
    if (
        txn is not None
        and after is not None
        and already_committed(after.recorded_txn_version(txn.app_id), txn)
    ):
        # A writer with the same identity committed between our check and our commit; Delta skipped ours.
        recorded = after.recorded_txn_version(txn.app_id)
        reason = "Delta skipped the write: " + committed_reason(txn, recorded)
        return WorkResult(
            table_version=current,
            skipped_duplicate=True,
            metrics={
                **result.metrics,
                **_duplicate_metrics(spark, table, txn, recorded, after.version, reason),
            },
        )
    reason = result.noop_reason or "the operation changed nothing, so Delta committed no new version"
    return WorkResult(
        table_version=current,
        skipped_duplicate=False,
        metrics={**result.metrics, "noop": True, "noop_reason": reason},
    )


def _duplicate_metrics(
    spark: SparkSession, table: Table, txn: TxnIdentity, recorded: int, latest: int, reason: str
) -> dict[str, Any]:
    """The metrics of a skipped duplicate, with the commit that recorded this exact identity looked up in the
    table's log (see :func:`airflow_provider_deltacc.contract.txn.duplicate_metrics`)."""
    committed = find_txn_commit(spark, table, txn.app_id, txn.version, latest)
    return duplicate_metrics(recorded, committed, reason)


def apply_hook(source: DataFrame, hook: SourceHook | None, attempt: int) -> DataFrame:
    """Apply the optional source hook.

    :param source: the final source DataFrame.
    :param hook: the hook or None.
    :param attempt: the attempt number.
    """
    return hook(source, attempt) if hook is not None else source


def check_expressions(frame: DataFrame, expressions: Mapping[str, str | None], *, predicate: bool) -> None:
    """Analyse SQL expressions against a DataFrame's columns without running a job.

    :param frame: a DataFrame whose columns the expressions may use (aliases included).
    :param expressions: spec field to expression; None entries are skipped.
    :param predicate: True to check them as filters, False as projections.
    :raises InputError: naming the field whose expression does not parse or resolve.
    """
    # DataFrame methods taking SQL text, not pyspark.sql.functions: those pick classic or Spark Connect
    # columns from process-wide state, which a process holding both kinds of session cannot rely on.
    for field_name, text in expressions.items():
        if text is None:
            continue
        if not isinstance(text, str) or not text.strip():
            raise InputError(field_name, text, "must be a non-empty SQL expression")
        try:
            if predicate:
                frame.where(text).schema  # noqa: B018 - analysis happens on access
            else:
                frame.selectExpr(text).schema  # noqa: B018
        except Exception as exc:  # ParseException, AnalysisException and friends
            raise InputError(
                field_name, text, f"is not a valid SQL expression here: {_first_line(exc)}"
            ) from None


def check_columns(columns: Mapping[str, Any], state: TableState, field_name: str) -> dict[str, str]:
    """Map column names to the table's spelling.

    :param columns: names to check (the keys are used).
    :param state: the target snapshot.
    :param field_name: the spec field, for errors.
    :raises InputError: on a column the table does not have.
    """
    resolved: dict[str, str] = {}
    for name in columns:
        actual = state.column_name(name)
        if actual is None:
            raise InputError(
                f"{field_name}.{name}",
                columns[name],
                f"the table has no column {name!r}; its columns are {state.schema.fieldNames()}",
            )
        resolved[name] = actual
    return resolved


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
