"""``append``: a blind append (creating the table on first write if asked)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import AppendOptions, JobSpec
from airflow_provider_deltacc.engine.clustering import (
    check_cluster_by_source,
    check_existing_clustering,
    create_clustered_table,
)
from airflow_provider_deltacc.engine.operations.base import (
    KnownState,
    PreparedOperation,
    SourceHook,
    WriteResult,
    apply_hook,
    prepared_operation,
    tracked_attempt,
)
from airflow_provider_deltacc.engine.sources import SourceReader
from airflow_provider_deltacc.engine.table import TableState, check_state, first_attempt_state
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def build_append(spark: SparkSession, spec: JobSpec, hook: SourceHook | None = None) -> PreparedOperation:
    """Validate an append and return its attempt.

    :param spark: the operation's session.
    :param spec: the job spec (``options`` is :class:`AppendOptions`).
    :param hook: optional source hook.
    """
    opts = spec.options
    assert isinstance(opts, AppendOptions) and spec.source is not None
    source_spec = spec.source
    initial = first_attempt_state(spark, spec)
    if initial is None and not opts.create_if_missing:
        raise InputError(
            "table", spec.table.name, "does not exist (or is not Delta) and create_if_missing is false"
        )
    if initial is not None and opts.cluster_by:
        check_existing_clustering(spark, spec.table, opts.cluster_by)

    def check(source: DataFrame) -> None:
        if initial is not None:
            check_state(spark, spec.table, initial, lambda state: _check_append_schema(source, state, opts))
        else:
            _check_new_partitioning(source, opts)
            check_cluster_by_source(source, opts.cluster_by)

    reader = SourceReader(spark, source_spec, check)

    def work(attempt: int) -> WorkResult:
        def write(state: TableState | None) -> WriteResult:
            frame = apply_hook(reader.load(), hook, attempt)
            if state is None and opts.cluster_by:
                # DataFrameWriter.clusterBy is ignored for path writes: create the clustered table first.
                create_clustered_table(spark, spec.table, frame, opts.cluster_by)
            writer = frame.write.format("delta").mode("append")
            if spec.txn is not None:
                writer = writer.options(**spec.txn.writer_options())
            if opts.merge_schema:
                writer = writer.option("mergeSchema", "true")
            if state is None and opts.partition_by:
                writer = writer.partitionBy(*opts.partition_by)
            if spec.table.is_path:
                writer.save(spec.table.name)
            else:
                writer.saveAsTable(spec.table.name)
            return WriteResult(metrics={"created_table": state is None, **reader.metrics()})

        return tracked_attempt(
            spark,
            spec.table,
            write,
            txn=spec.txn,
            txn_in_session=False,
            may_create=True,
            # A committed duplicate must not call the user's function: check the identity first.
            write_checks_txn=not reader.calls_user_code,
            known=KnownState.for_attempt(attempt, initial),
        )

    return prepared_operation("append", work, options={"merge_schema": opts.merge_schema})


def _check_append_schema(source: DataFrame, state: TableState, opts: AppendOptions) -> None:
    if opts.partition_by:
        wanted = [c.lower() for c in opts.partition_by]
        actual = [c.lower() for c in state.partition_columns]
        if wanted != actual:
            raise InputError(
                "options.partition_by",
                list(opts.partition_by),
                f"the table exists and is partitioned by {list(state.partition_columns)}; "
                "drop partition_by or make it match",
            )
    if opts.merge_schema:
        return
    extra = [c for c in source.columns if state.column_name(c) is None]
    if extra:
        raise InputError(
            "source",
            extra,
            f"the source has columns the table lacks (table columns: {state.schema.fieldNames()}); "
            "drop them or set options.merge_schema to true",
        )
    check_type_families(source, state)


def check_type_families(source: DataFrame, state: TableState) -> None:
    """Refuse source columns whose type cannot become the table column's type (a string into a date, a
    number into a boolean, a struct into a string), which Delta would only reject while writing.

    Types of one family (numbers of different widths, timestamps with and without zone) are left to Delta,
    which widens where it safely can.

    :param source: the source DataFrame.
    :param state: the target snapshot.
    :raises InputError: naming ``source.<column>``.
    """
    for field in source.schema.fields:
        target = state.column_type(field.name)
        if target is None:
            continue
        mine, theirs = _family(field.dataType), _family(target)
        if mine is not None and theirs is not None and mine != theirs:
            raise InputError(
                f"source.{field.name}",
                field.dataType.simpleString(),
                f"the table's column {state.column_name(field.name)!r} is {target.simpleString()}; cast the "
                f"source column to {target.simpleString()}",
            )


def _family(data_type: Any) -> str | None:
    from pyspark.sql import types as T

    families: tuple[tuple[type, str], ...] = (
        (T.NullType, ""),
        (T.BooleanType, "boolean"),
        (T.NumericType, "number"),
        (T.StringType, "string"),
        (T.VarcharType, "string"),
        (T.CharType, "string"),
        (T.BinaryType, "binary"),
        (T.DateType, "datetime"),
        (T.TimestampType, "datetime"),
        (T.TimestampNTZType, "datetime"),
        (T.ArrayType, "array"),
        (T.MapType, "map"),
        (T.StructType, "struct"),
    )
    for cls, family in families:
        if isinstance(data_type, cls):
            return family or None
    return None


def _check_new_partitioning(source: DataFrame, opts: AppendOptions) -> None:
    names = {c.lower() for c in source.columns}
    for index, column in enumerate(opts.partition_by):
        if column.lower() not in names:
            raise InputError(
                f"options.partition_by[{index}]",
                column,
                f"is not a source column; source columns are {source.columns}",
            )
