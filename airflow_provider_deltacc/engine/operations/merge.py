"""``merge``: upsert/delete by key, with optional source de-duplication and partition pinning.

The target is aliased ``t`` and the source ``s`` in every condition and expression.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.literals import embedded_expression, quote_identifier
from airflow_provider_deltacc.contract.operations import SCHEMA_AUTO_MERGE_CONF, evolves_schema
from airflow_provider_deltacc.contract.spec import JobSpec, MergeOptions
from airflow_provider_deltacc.contract.spec_facts import merge_pin_columns
from airflow_provider_deltacc.engine.literals import escaped_string_literals
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    SourceHook,
    WriteResult,
    apply_hook,
    check_columns,
    check_expressions,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.pinning import (
    partition_predicate,
    resolve_pin_columns,
    source_filter,
    source_partition_values,
)
from airflow_provider_deltacc.engine.sources import SourceReader, source_rows
from airflow_provider_deltacc.engine.table import (
    TableState,
    check_state,
    expression_frame,
    required_first_attempt_state,
)
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TARGET_ALIAS = "t"
SOURCE_ALIAS = "s"
#: Stands for the source in a built statement until it is made formattable (see :func:`formattable`).
SOURCE_PLACEHOLDER = f"deltacc_source_{uuid.uuid4().hex}"


def build_merge(spark: SparkSession, spec: JobSpec, hook: SourceHook | None = None) -> PreparedOperation:
    """Validate a MERGE and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`MergeOptions`).
    :param hook: optional source hook, applied after de-duplication and pinning.
    """
    opts = spec.options
    assert isinstance(opts, MergeOptions) and spec.source is not None
    source_spec = spec.source
    state = required_first_attempt_state(spark, spec)
    pin_columns = _pin_columns(opts, state)

    def check(source: DataFrame) -> None:
        check_state(
            spark, spec.table, state, lambda known: _validate(spark, spec, opts, known, source, pin_columns)
        )

    reader = SourceReader(spark, source_spec, check)
    # Inline rows (not de-duplicated) give their partition values without a Spark job.
    inline = (
        source_rows(spark, source_spec)
        if source_spec.kind == "rows" and opts.dedup_order_by is None
        else None
    )

    def work(attempt: int) -> WorkResult:
        def write(current: TableState | None) -> WriteResult:
            assert current is not None
            frame = _dedup(reader.load(), opts)
            condition = _on_condition(opts)
            metrics: dict[str, Any] = reader.metrics()
            columns = _pin_columns(opts, current)
            if columns:
                values = source_partition_values(
                    frame, columns, max_values=opts.max_pin_values, inline=inline
                )
                if not values:
                    return WriteResult(noop_reason="the source is empty; nothing to merge")
                pin = partition_predicate(
                    values, current, qualifier=TARGET_ALIAS, escaped=escaped_string_literals(spark)
                )
                # Only rows inside the pinned partitions may reach the MERGE: a row from another partition
                # (a source that grew since the values were collected) would miss its match and be inserted.
                frame = frame.where(source_filter(values, frame))
                condition = f"({condition}) AND {pin}"
                metrics["partition_pin"] = pin
                metrics["pinned_partitions"] = len(values)
            elif frame.isEmpty():
                return WriteResult(noop_reason="the source is empty; nothing to merge")
            frame = apply_hook(frame, hook, attempt)
            statement = merge_statement(spec.table.sql, SOURCE_PLACEHOLDER, condition, opts)
            # The source travels with the statement (a view of the statement's own, no temporary view to
            # create and drop: two round trips over Spark Connect).
            spark.sql(formattable(statement, SOURCE_PLACEHOLDER, "source"), source=frame)
            return WriteResult(metrics=metrics)

        return tracked_attempt(
            spark,
            spec.table,
            write,
            txn=spec.txn,
            txn_in_session=True,
            # A committed duplicate must not call the user's function: check the identity first.
            write_checks_txn=not reader.calls_user_code,
            known=KnownState.for_attempt(attempt, state),
        )

    # With schema auto-merge the MERGE may add columns: a schema change, never retried over another one.
    return prepared_operation("merge", work, spark_conf=_schema_conf(spark), pinned_columns=pin_columns)


def _schema_conf(spark: SparkSession) -> dict[str, str]:
    return {SCHEMA_AUTO_MERGE_CONF: str(spark.conf.get(SCHEMA_AUTO_MERGE_CONF, "false"))}


def schema_auto_merge(spark: SparkSession) -> bool:
    """True when the session lets MERGE add the source's new columns to the table."""
    return evolves_schema("merge", {}, _schema_conf(spark))


def _pin_columns(opts: MergeOptions, state: TableState) -> tuple[str, ...]:
    if opts.partition_pin == "keyed":
        return merge_pin_columns(opts, state.partition_columns, resolve=lambda column: None)
    return resolve_pin_columns(opts.partition_pin, state)  # a column it does not know is bad input


def _on_condition(opts: MergeOptions) -> str:
    if opts.condition is not None:
        return opts.condition
    t, s = quote_identifier(TARGET_ALIAS), quote_identifier(SOURCE_ALIAS)
    return " AND ".join(f"{t}.{quote_identifier(k)} = {s}.{quote_identifier(k)}" for k in opts.keys)


def _dedup(frame: DataFrame, opts: MergeOptions) -> DataFrame:
    if opts.dedup_order_by is None:
        return frame
    keys = ", ".join(quote_identifier(k) for k in opts.dedup_keys or opts.keys)
    order = quote_identifier(opts.dedup_order_by)
    rank = "__deltacc_rank"
    # SQL text rather than Window/functions objects, which pick classic or Spark Connect columns from
    # process-wide state.
    ranked = frame.selectExpr(
        "*", f"row_number() OVER (PARTITION BY {keys} ORDER BY {order} DESC NULLS LAST) AS {rank}"
    )
    return ranked.where(f"{rank} = 1").drop(rank)


def merge_statement(target: str, source: str, condition: str, opts: MergeOptions) -> str:
    """The MERGE statement: ``target`` aliased ``t``, ``source`` aliased ``s``, the clauses of ``opts``.

    :param target: the target's SQL reference (:attr:`~airflow_provider_deltacc.contract.table.Table.sql`).
    :param source: the source view's quoted name.
    :param condition: the ON condition (already analysed, and pinned where pinning applies).
    :param opts: the MERGE options; every user expression in them has been analysed as one expression.
    """
    t, s = quote_identifier(TARGET_ALIAS), quote_identifier(SOURCE_ALIAS)
    lines = [f"MERGE INTO {target} AS {t}", f"USING {source} AS {s}", f"ON {embedded_expression(condition)}"]
    for clause in opts.when_matched:
        if clause.action == "delete":
            action = "DELETE"
        elif clause.assignments is None:
            action = "UPDATE SET *"
        else:
            action = "UPDATE SET " + ", ".join(
                f"{quote_identifier(c)} = {embedded_expression(e)}" for c, e in clause.assignments.items()
            )
        lines.append(f"WHEN MATCHED{_and(clause.condition)} THEN {action}")
    for clause in opts.when_not_matched:
        if clause.assignments is None:
            action = "INSERT *"
        else:
            columns = ", ".join(quote_identifier(c) for c in clause.assignments)
            values = ", ".join(embedded_expression(e) for e in clause.assignments.values())
            action = f"INSERT ({columns}) VALUES ({values})"
        lines.append(f"WHEN NOT MATCHED{_and(clause.condition)} THEN {action}")
    return "\n".join(lines)


def formattable(statement: str, placeholder: str, name: str) -> str:
    """``statement`` as a template for ``spark.sql(text, name=frame)``: every brace of its own (a path, a
    string literal in a user expression) escaped, and ``placeholder`` replaced by ``{name}``.

    :param statement: the SQL statement.
    :param placeholder: the text that stands for the DataFrame (unlike anything a user writes).
    :param name: the keyword argument the DataFrame is passed as.
    """
    escaped = statement.replace("{", "{{").replace("}", "}}")
    return escaped.replace(placeholder, "{" + name + "}")


def _and(condition: str | None) -> str:
    return "" if condition is None else f" AND {embedded_expression(condition)}"


def _validate(
    spark: SparkSession,
    spec: JobSpec,
    opts: MergeOptions,
    state: TableState,
    source: DataFrame,
    pin_columns: tuple[str, ...],
) -> None:
    source_names = {c.lower() for c in source.columns}
    for index, key in enumerate(opts.keys):
        if state.column_name(key) is None:
            raise InputError(
                f"options.keys[{index}]",
                key,
                f"the table has no such column; it has {state.schema.fieldNames()}",
            )
        if key.lower() not in source_names:
            raise InputError(
                f"options.keys[{index}]", key, f"the source has no such column; it has {source.columns}"
            )
    for index, key in enumerate(opts.dedup_keys or opts.keys if opts.dedup_order_by else ()):
        if key.lower() not in source_names:
            raise InputError(
                f"options.dedup_keys[{index}]", key, f"the source has no such column; it has {source.columns}"
            )
    if opts.dedup_order_by is not None and opts.dedup_order_by.lower() not in source_names:
        raise InputError(
            "options.dedup_order_by",
            opts.dedup_order_by,
            f"the source has no such column; it has {source.columns}",
        )
    for column in pin_columns:
        if column.lower() not in source_names:
            raise InputError(
                "options.partition_pin",
                column,
                f"pinning reads partition values from the source, which has no column {column!r}; "
                "add it to the source or set partition_pin to null",
            )
    target = expression_frame(spark, spec.table, state).alias(TARGET_ALIAS)
    joined = target.crossJoin(source.alias(SOURCE_ALIAS))
    expressions: dict[str, str | None] = {"options.condition": opts.condition}
    projections: dict[str, str | None] = {}
    for group, clauses in (("when_matched", opts.when_matched), ("when_not_matched", opts.when_not_matched)):
        for index, clause in enumerate(clauses):
            expressions[f"options.{group}[{index}].condition"] = clause.condition
            if clause.assignments is not None:
                key = "set" if clause.action == "update" else "values"
                check_columns(clause.assignments, state, f"options.{group}[{index}].{key}")
                for column, expression in clause.assignments.items():
                    projections[f"options.{group}[{index}].{key}.{column}"] = expression
            else:
                extra = [c for c in source.columns if state.column_name(c) is None]
                if clause.action in ("update", "insert") and extra and not schema_auto_merge(spark):
                    raise InputError(
                        f"options.{group}[{index}]",
                        clause.action,
                        f"{clause.action} of all columns needs every source column in the table; "
                        f"the table lacks {extra}; list the columns in "
                        f"{'set' if clause.action == 'update' else 'values'} instead, or enable schema "
                        f"evolution ({SCHEMA_AUTO_MERGE_CONF}=true in spark_conf)",
                    )
    check_expressions(joined, expressions, predicate=True)
    check_expressions(joined, projections, predicate=False)
