"""``vacuum``: delete unreferenced files older than the retention, never below the table's unless forced.

Delta >= 4.1 ignores a non-zero ``RETAIN n HOURS`` and uses the table's retention instead
(``spark.databricks.delta.vacuum.retentionWindowIgnore.enabled``). That could delete files the caller asked to
keep, so when a retention is requested the ignore switch is turned off in this operation's own session, and
the metrics say so (``retention_window_ignore_detected``/``requested_retention_honored``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.retention import RETENTION_PROPERTY, table_retention_hours
from airflow_provider_deltacc.contract.spec import JobSpec, VacuumOptions
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    WriteResult,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.retention import (
    RETENTION_CHECK_CONF,
    RETENTION_WINDOW_IGNORE_CONF,
    retention_window_ignored,
)
from airflow_provider_deltacc.engine.table import TableState, read_table_state, require_table_state
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_vacuum(spark: SparkSession, spec: JobSpec) -> PreparedOperation:
    """Validate a VACUUM and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`VacuumOptions`).
    """
    opts = spec.options
    assert isinstance(opts, VacuumOptions)
    initial = require_table_state(spark, spec.table)
    _plan(spark, spec.table, opts, initial)

    def work(attempt: int) -> WorkResult:
        plan: dict[str, Any] = {}

        def write(current: TableState | None) -> WriteResult:
            assert current is not None
            statement, metrics = plan["statement"], plan["metrics"]
            rows = spark.sql(statement).collect()
            if opts.dry_run:
                metrics["files_to_delete"] = len(rows)
                return WriteResult(metrics=metrics, noop_reason="dry run")
            return WriteResult(metrics=metrics)

        state = initial if attempt == 1 else read_table_state(spark, spec.table)
        statement, confs, metrics = _plan(spark, spec.table, opts, state)
        plan.update(statement=statement, metrics=metrics)
        return tracked_attempt(
            spark,
            spec.table,
            write,
            txn=None,
            txn_in_session=False,
            extra_confs=confs,
            known=KnownState(state),
        )

    return prepared_operation("vacuum", work)


def _plan(
    spark: SparkSession, table: Table, opts: VacuumOptions, state: TableState
) -> tuple[str, dict[str, str], dict[str, Any]]:
    requested = opts.retention_hours
    if requested is not None and requested < 0:
        raise InputError("options.retention_hours", requested, "must be >= 0 hours")
    unreadable = ""
    try:
        table_hours: float | None = table_retention_hours(state.properties)
    except ValueError as exc:
        table_hours, unreadable = None, str(exc)
    metrics: dict[str, Any] = {"table_retention_hours": table_hours, "requested_retention_hours": requested}
    warnings: list[str] = []
    confs: dict[str, str] = {}
    if requested is not None and (table_hours is None or requested < table_hours):
        if not opts.force:
            limit = f"{table_hours:g} h" if table_hours is not None else f"unreadable ({unreadable})"
            raise InputError(
                "options.retention_hours",
                requested,
                f"is below the table's {RETENTION_PROPERTY} ({limit}); files still needed by running writers "
                "and readers could be deleted. Raise it, omit it, or set options.force to true",
            )
        confs[RETENTION_CHECK_CONF] = "false"
        warnings.append(f"forced a retention of {requested:g} h below the table's {RETENTION_PROPERTY}")
    ignored = retention_window_ignored(spark)
    metrics["retention_window_ignore_detected"] = ignored
    if requested is not None and requested != 0 and ignored:
        confs[RETENTION_WINDOW_IGNORE_CONF] = "false"
        warnings.append(
            f"this Delta ignores RETAIN {requested:g} HOURS by default "
            f"({RETENTION_WINDOW_IGNORE_CONF}=true); turned that off for this VACUUM so the requested "
            "retention is used"
        )
    metrics["requested_retention_honored"] = requested is not None
    metrics["effective_retention_hours"] = requested if requested is not None else table_hours
    metrics["warnings"] = warnings
    statement = f"VACUUM {table.sql}"
    if requested is not None:
        statement += f" RETAIN {_hours(requested)} HOURS"
    if opts.dry_run:
        statement += " DRY RUN"
    return statement, confs, metrics


def _hours(value: float) -> str:
    # A plain decimal: the VACUUM grammar takes no exponent, and the value was validated as a number.
    return f"{float(value):.6f}".rstrip("0").rstrip(".")
