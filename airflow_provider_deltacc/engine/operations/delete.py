"""``delete``: remove the rows matching a filter (condition, ``equals`` literals, pinned partitions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.spec import DeleteOptions, JobSpec
from airflow_provider_deltacc.engine.literals import escaped_string_literals
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    WriteResult,
    check_expressions,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.operations.filters import row_filter
from airflow_provider_deltacc.engine.table import TableState, expression_frame, required_first_attempt_state
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_delete(spark: SparkSession, spec: JobSpec) -> PreparedOperation:
    """Validate a DELETE and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`DeleteOptions`).
    """
    opts = spec.options
    assert isinstance(opts, DeleteOptions)
    state = required_first_attempt_state(spark, spec)
    _filter(spark, opts, state)
    check_expressions(
        expression_frame(spark, spec.table, state), {"options.condition": opts.condition}, predicate=True
    )

    def work(attempt: int) -> WorkResult:
        def write(current: TableState | None) -> WriteResult:
            assert current is not None
            condition = _filter(spark, opts, current)
            # The alias is not optional: without it the parser reads ``WHERE (`` as an alias and its columns.
            spark.sql(f"DELETE FROM {spec.table.sql} AS t WHERE {condition}")
            return WriteResult(metrics={"condition": condition})

        return tracked_attempt(
            spark,
            spec.table,
            write,
            txn=spec.txn,
            txn_in_session=True,
            write_checks_txn=True,
            known=KnownState.for_attempt(attempt, state),
        )

    return prepared_operation("delete", work)


def _filter(spark: SparkSession, opts: DeleteOptions, state: TableState) -> str:
    condition = row_filter(
        state,
        condition=opts.condition,
        equals=opts.equals,
        partition_values=opts.partition_values,
        escaped=escaped_string_literals(spark),
    )
    # The spec parser requires a filter; a whole-table delete is spelled condition "true".
    assert condition is not None
    return condition
