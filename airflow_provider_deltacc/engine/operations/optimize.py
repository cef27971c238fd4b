"""``optimize``: bin-packing compaction or Z-ordering, optionally limited to some partitions; on a
liquid-clustered table, incremental clustering (or ``FULL``: every file)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.literals import quote_identifier
from airflow_provider_deltacc.contract.spec import JobSpec, OptimizeOptions
from airflow_provider_deltacc.engine.clustering import clustering_columns, is_unsupported_full
from airflow_provider_deltacc.engine.literals import escaped_string_literals
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    WriteResult,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.pinning import check_partition_values, partition_predicate
from airflow_provider_deltacc.engine.table import TableState, require_table_state
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_optimize(spark: SparkSession, spec: JobSpec) -> PreparedOperation:
    """Validate an OPTIMIZE and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`OptimizeOptions`).
    """
    opts = spec.options
    assert isinstance(opts, OptimizeOptions)
    state = require_table_state(spark, spec.table)
    if opts.full or opts.zorder_by or opts.partition_values is not None:  # a plain OPTIMIZE suits both
        _check_clustering(opts, clustering_columns(spark, spec.table))
    if opts.partition_values is not None:
        check_partition_values(opts.partition_values, state)
    for index, column in enumerate(opts.zorder_by):
        actual = state.column_name(column)
        if actual is None:
            raise InputError(
                f"options.zorder_by[{index}]",
                column,
                f"the table has no such column; it has {state.schema.fieldNames()}",
            )
        if actual in state.partition_columns:
            raise InputError(
                f"options.zorder_by[{index}]", column, "is a partition column; Z-order by data columns only"
            )

    def work(attempt: int) -> WorkResult:
        def write(current: TableState | None) -> WriteResult:
            assert current is not None
            statement = f"OPTIMIZE {spec.table.sql}"
            where = None
            if opts.partition_values is not None:
                values = check_partition_values(opts.partition_values, current)
                where = partition_predicate(values, current, escaped=escaped_string_literals(spark))
                statement += f" WHERE {where}"
            if opts.zorder_by:
                statement += f" ZORDER BY ({', '.join(quote_identifier(c) for c in opts.zorder_by)})"
            if opts.full:
                statement += " FULL"
            try:
                row = spark.sql(statement).collect()[0]["metrics"]
            except Exception as exc:
                if opts.full and is_unsupported_full(exc):
                    raise InputError(
                        "options.full", True, "this Delta version has no OPTIMIZE FULL (Delta >= 3.3 has it)"
                    ) from None
                raise
            metrics = {
                "where": where,
                "num_files_added": int(row["numFilesAdded"]),
                "num_files_removed": int(row["numFilesRemoved"]),
                "partitions_optimized": int(row["partitionsOptimized"]),
            }
            if metrics["num_files_added"] == 0 and metrics["num_files_removed"] == 0:
                return WriteResult(metrics=metrics, noop_reason="nothing to compact")
            return WriteResult(metrics=metrics)

        return tracked_attempt(
            spark,
            spec.table,
            write,
            txn=None,
            txn_in_session=False,
            known=KnownState.for_attempt(attempt, state),
        )

    return prepared_operation("optimize", work)


def _check_clustering(opts: OptimizeOptions, clustering: tuple[str, ...]) -> None:
    """Refuse what Delta refuses on (or only allows on) a liquid-clustered table, naming the field."""
    if opts.full and not clustering:
        raise InputError(
            "options.full",
            True,
            "OPTIMIZE FULL only applies to a liquid-clustered table and this one is not clustered; drop full",
        )
    if not clustering:
        return
    if opts.zorder_by:
        raise InputError(
            "options.zorder_by",
            list(opts.zorder_by),
            f"the table is liquid-clustered by {list(clustering)}, which replaces Z-ordering; drop zorder_by "
            "(OPTIMIZE clusters the table incrementally)",
        )
    if opts.partition_values is not None:
        raise InputError(
            "options.partition_values",
            list(opts.partition_values),
            f"the table is liquid-clustered by {list(clustering)} and has no partitions; drop "
            "partition_values (OPTIMIZE clusters only the files that need it)",
        )
