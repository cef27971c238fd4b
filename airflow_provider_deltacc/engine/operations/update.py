"""``update``: set columns on the rows matching a filter (expressions and/or quoted literal values)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError, LiteralError
from airflow_provider_deltacc.contract.literals import embedded_expression, quote_identifier, sql_literal
from airflow_provider_deltacc.contract.spec import JobSpec, UpdateOptions
from airflow_provider_deltacc.engine.literals import escaped_string_literals
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    WriteResult,
    check_columns,
    check_expressions,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.operations.filters import row_filter
from airflow_provider_deltacc.engine.table import TableState, expression_frame, required_first_attempt_state
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_update(spark: SparkSession, spec: JobSpec) -> PreparedOperation:
    """Validate an UPDATE and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`UpdateOptions`).
    """
    opts = spec.options
    assert isinstance(opts, UpdateOptions)
    state = required_first_attempt_state(spark, spec)
    _plan(spark, opts, state)
    target = expression_frame(spark, spec.table, state)
    check_expressions(target, {"options.condition": opts.condition}, predicate=True)
    check_expressions(
        target,
        {f"options.set.{column}": expression for column, expression in opts.set.items()},
        predicate=False,
    )

    def work(attempt: int) -> WorkResult:
        def write(current: TableState | None) -> WriteResult:
            assert current is not None
            condition, assignments = _plan(spark, opts, current)
            settings = ", ".join(
                f"{column} = {embedded_expression(value)}" for column, value in assignments.items()
            )
            where = "" if condition is None else f" WHERE {condition}"
            spark.sql(f"UPDATE {spec.table.sql} SET {settings}{where}")
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

    return prepared_operation("update", work)


def _plan(spark: SparkSession, opts: UpdateOptions, state: TableState) -> tuple[str | None, dict[str, str]]:
    escaped = escaped_string_literals(spark)
    condition = row_filter(
        state,
        condition=opts.condition,
        equals=opts.equals,
        partition_values=opts.partition_values,
        escaped=escaped,
    )
    assignments: dict[str, str] = {}
    for name, actual in check_columns(opts.set, state, "options.set").items():
        assignments[quote_identifier(actual)] = opts.set[name]
    for name, actual in check_columns(opts.set_values, state, "options.set_values").items():
        data_type = state.column_type(actual)
        assert data_type is not None
        try:
            literal = sql_literal(opts.set_values[name], data_type, escaped=escaped)
        except LiteralError as exc:
            raise InputError(f"options.set_values.{name}", opts.set_values[name], str(exc)) from None
        assignments[quote_identifier(actual)] = literal
    return condition, assignments
