"""``overwrite_partitions``: replace whole partitions with the source (``replaceWhere`` of literals)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import JobSpec, OverwritePartitionsOptions
from airflow_provider_deltacc.engine.literals import escaped_string_literals
from airflow_provider_deltacc.engine.operations.append import check_type_families
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    SourceHook,
    WriteResult,
    apply_hook,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.pinning import (
    check_partition_values,
    partition_predicate,
    source_partition_values,
)
from airflow_provider_deltacc.engine.sources import SourceReader, source_rows
from airflow_provider_deltacc.engine.table import TableState, check_state, required_first_attempt_state
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def build_overwrite_partitions(
    spark: SparkSession, spec: JobSpec, hook: SourceHook | None = None
) -> PreparedOperation:
    """Validate a partition overwrite and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`OverwritePartitionsOptions`).
    :param hook: optional source hook.
    """
    opts = spec.options
    assert isinstance(opts, OverwritePartitionsOptions) and spec.source is not None
    source_spec = spec.source
    state = required_first_attempt_state(spark, spec)
    if not state.partition_columns:
        raise InputError(
            "table", spec.table.name, "is not partitioned; overwrite_partitions needs a partitioned table"
        )
    if opts.partition_values is not None:
        check_partition_values(opts.partition_values, state)

    def check(source: DataFrame) -> None:
        check_state(spark, spec.table, state, lambda known: _check_source(source, known))

    reader = SourceReader(spark, source_spec, check)

    inline = source_rows(spark, source_spec) if source_spec.kind == "rows" else None

    def work(attempt: int) -> WorkResult:
        def write(current: TableState | None) -> WriteResult:
            assert current is not None
            frame = reader.load()
            if opts.partition_values is not None:
                values = check_partition_values(opts.partition_values, current)
            else:
                values = source_partition_values(
                    frame,
                    current.partition_columns,
                    max_values=opts.max_partitions,
                    field_name="options.max_partitions",
                    inline=inline,
                )
                if not values:
                    return WriteResult(
                        noop_reason="the source is empty, so there are no partitions to replace"
                    )
            predicate = partition_predicate(values, current, escaped=escaped_string_literals(spark))
            writer = (
                apply_hook(frame, hook, attempt)
                .write.format("delta")
                .mode("overwrite")
                .option("replaceWhere", predicate)
            )
            if spec.txn is not None:
                writer = writer.options(**spec.txn.writer_options())
            if spec.table.is_path:
                writer.save(spec.table.name)
            else:
                writer.saveAsTable(spec.table.name)
            return WriteResult(
                metrics={"replace_where": predicate, "partitions": len(values), **reader.metrics()}
            )

        return tracked_attempt(
            spark,
            spec.table,
            write,
            txn=spec.txn,
            txn_in_session=False,
            # A committed duplicate must not call the user's function: check the identity first.
            write_checks_txn=not reader.calls_user_code,
            known=KnownState.for_attempt(attempt, state),
        )

    return prepared_operation("overwrite_partitions", work)


def _check_source(source: DataFrame, state: TableState) -> None:
    columns = {c.lower() for c in source.columns}
    missing = [c for c in state.partition_columns if c.lower() not in columns]
    if missing:
        raise InputError("source", source.columns, f"lacks the table's partition columns {missing}")
    check_type_families(source, state)
