"""Writer operators: append, overwrite partitions, MERGE, UPDATE, DELETE and arbitrary SQL.

Each builds its job spec; :class:`~airflow_provider_deltacc.operators.write_base.DeltaWriteOperator` runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.contract.spec import (
    PARTITION_AND_CLUSTER,
    AppendOptions,
    DeleteOptions,
    MergeOptions,
    OverwritePartitionsOptions,
    SourceSpec,
    SqlOptions,
    UpdateOptions,
)
from airflow_provider_deltacc.contract.spec_options import (
    append_options,
    delete_options,
    merge_options,
    overwrite_partitions_options,
    sql_options,
    update_options,
)
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators import parse_time
from airflow_provider_deltacc.operators.sources import SourceArgument, kept_source, source_spec
from airflow_provider_deltacc.operators.write_base import DeltaWriteOperator

if TYPE_CHECKING:
    from airflow.sdk import Context


def check_layout(task_id: str, partition_by: list[str] | None, cluster_by: list[str] | None) -> None:
    """Refuse ``partition_by`` together with ``cluster_by`` when the DAG is parsed.

    :param task_id: the task, for the message.
    :param partition_by: the partition columns asked for.
    :param cluster_by: the clustering columns asked for.
    :raises DeltaCCInputError: naming both fields.
    """
    if partition_by and cluster_by:
        raise DeltaCCInputError(
            f"{task_id}: partition_by={partition_by!r}, cluster_by={cluster_by!r}: {PARTITION_AND_CLUSTER}",
            field="cluster_by",
            value=cluster_by,
        )


class DeltaAppendOperator(DeltaWriteOperator):
    """Append the source's rows to a Delta table (a blind append: it conflicts with nothing but schema
    and protocol changes, and is exactly-once across retries).

    :param source: a table name or path, a parquet/CSV path, a SQL query, the dict form, or a source
        function: your own PySpark code, ``f(spark, ...)`` returning the DataFrame, called afresh in every
        attempt (see ``docs/pyspark.md``). (templated)
    :param partition_by: partition columns when the append creates the table.
    :param create_if_missing: create the table if it does not exist.
    :param merge_schema: add new source columns to the table (a schema change: never retried over
        another schema change).
    :param cluster_by: liquid-clustering columns when the append creates the table (``CREATE TABLE …
        CLUSTER BY``); on an existing table they must match its clustering columns. Not with
        ``partition_by``. See ``docs/clustering.md`` for what protects a clustered table from conflicts.
    """

    operation = "append"
    template_fields: Sequence[str] = (*DeltaWriteOperator.template_fields, "source")
    advisor_arguments = (*DeltaWriteOperator.advisor_arguments, "partition_by", "merge_schema", "cluster_by")

    def __init__(
        self,
        *,
        source: SourceArgument,
        partition_by: list[str] | None = None,
        create_if_missing: bool = True,
        merge_schema: bool = False,
        cluster_by: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.source = kept_source(source, task_id=self.task_id)
        self.partition_by = partition_by
        self.create_if_missing = create_if_missing
        self.merge_schema = merge_schema
        self.cluster_by = cluster_by
        check_layout(self.task_id, partition_by, cluster_by)

    def class_options(self) -> dict[str, Any]:
        return {"merge_schema": self.merge_schema}

    def build_source(self, context: Context) -> SourceSpec | None:
        return source_spec(self.source, context=context)

    def build_options(self, context: Context) -> AppendOptions:
        return append_options(
            partition_by=self.partition_by,
            create_if_missing=self.create_if_missing,
            merge_schema=self.merge_schema,
            cluster_by=self.cluster_by,
        )


class DeltaOverwritePartitionsOperator(DeltaWriteOperator):
    """Replace whole partitions with the source's rows (``replaceWhere`` built from quoted literals).

    :param source: the new rows (see :class:`DeltaAppendOperator`). (templated)
    :param partition_values: the partitions to replace, e.g. ``[{"date": "2026-11-20"}]``; by default the
        source's distinct partitions. (templated)
    """

    operation = "overwrite_partitions"
    template_fields: Sequence[str] = (*DeltaWriteOperator.template_fields, "source", "partition_values")

    def __init__(
        self,
        *,
        source: SourceArgument,
        partition_values: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.source = kept_source(source, task_id=self.task_id)
        self.partition_values = partition_values

    def build_source(self, context: Context) -> SourceSpec | None:
        return source_spec(self.source, context=context)

    def build_options(self, context: Context) -> OverwritePartitionsOptions:
        return overwrite_partitions_options(partition_values=self.partition_values)


class DeltaMergeOperator(DeltaWriteOperator):
    """MERGE the source into a Delta table, with partition pinning so writers on different partitions do
    not conflict.

    :param source: the rows to merge (see :class:`DeltaAppendOperator`). (templated)
    :param keys: merge key columns (``t.k = s.k AND …``); or give ``condition``. (templated)
    :param condition: an explicit ON condition with aliases ``t`` (target) and ``s`` (source). (templated)
    :param when_matched: clauses, e.g. ``[{"action": "update"}]`` (default: update all columns) or
        ``[{"action": "delete", "condition": "s.deleted"}]``. (templated)
    :param when_not_matched: clauses, e.g. ``[{"action": "insert"}]`` (default: insert all). (templated)
    :param partition_pin: ``"keyed"`` (default: pin partition columns that are merge keys), ``"auto"``
        (all partition columns), a list of columns, or None (no pin).
    :param dedup_order_by: keep only the latest source row per key, by this ordering expression.
    :param dedup_keys: the keys for de-duplication (default: ``keys``).
    """

    operation = "merge"
    template_fields: Sequence[str] = (
        *DeltaWriteOperator.template_fields,
        "source",
        "keys",
        "condition",
        "when_matched",
        "when_not_matched",
    )
    advisor_arguments = (*DeltaWriteOperator.advisor_arguments, "partition_pin")

    def __init__(
        self,
        *,
        source: SourceArgument,
        keys: list[str] | None = None,
        condition: str | None = None,
        when_matched: list[dict[str, Any]] | None = None,
        when_not_matched: list[dict[str, Any]] | None = None,
        partition_pin: str | list[str] | None = "keyed",
        dedup_order_by: str | None = None,
        dedup_keys: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.source = kept_source(source, task_id=self.task_id)
        self.keys = keys
        self.condition = condition
        self.when_matched = when_matched
        self.when_not_matched = when_not_matched
        self.partition_pin = partition_pin
        self.dedup_order_by = dedup_order_by
        self.dedup_keys = dedup_keys
        parse_time.check_merge(self.task_id, self.table, partition_pin)

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """Airflow's ``partial()``; ``partition_pin=None`` goes on as ``[]``, which the job and the write
        lease read as no pin too: the serialized DAG leaves out a partial argument that is None, so the
        conflict advisor would read the default ``"keyed"`` from it."""
        if "partition_pin" in kwargs and kwargs["partition_pin"] is None:
            kwargs["partition_pin"] = []
        return super().partial(**kwargs)

    def build_source(self, context: Context) -> SourceSpec | None:
        return source_spec(self.source, context=context)

    def build_options(self, context: Context) -> MergeOptions:
        return merge_options(
            keys=self.keys,
            condition=self.condition,
            when_matched=self.when_matched,
            when_not_matched=self.when_not_matched,
            dedup_order_by=self.dedup_order_by,
            dedup_keys=self.dedup_keys,
            partition_pin=self.partition_pin,
        )


class _FilteredDmlOperator(DeltaWriteOperator):
    """UPDATE and DELETE share their row filter: a SQL condition, column equalities (quoted for you),
    and/or explicit partitions (quoted literal predicates that keep concurrent writers apart)."""

    template_fields: Sequence[str] = (
        *DeltaWriteOperator.template_fields,
        "condition",
        "equals",
        "partition_values",
    )

    def __init__(
        self,
        *,
        condition: str | None = None,
        equals: dict[str, Any] | None = None,
        partition_values: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.condition = condition
        self.equals = equals
        self.partition_values = partition_values


class DeltaUpdateOperator(_FilteredDmlOperator):
    """UPDATE rows of a Delta table.

    :param set_expressions: column → SQL expression, e.g. ``{"status": "upper(status)"}``. (templated)
    :param set_values: column → plain value, quoted as a literal of the column's type. (templated)
    :param condition: a SQL condition on the table's columns. (templated)
    :param equals: column → value equalities, quoted for you. (templated)
    :param partition_values: restrict to these partitions, e.g. ``[{"date": "2026-11-20"}]``. (templated)
    """

    operation = "update"
    template_fields: Sequence[str] = (*_FilteredDmlOperator.template_fields, "set_expressions", "set_values")

    def __init__(
        self,
        *,
        set_expressions: dict[str, str] | None = None,
        set_values: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.set_expressions = set_expressions
        self.set_values = set_values

    def build_options(self, context: Context) -> UpdateOptions:
        return update_options(
            set=self.set_expressions,
            set_values=self.set_values,
            condition=self.condition,
            equals=self.equals,
            partition_values=self.partition_values,
        )


class DeltaDeleteOperator(_FilteredDmlOperator):
    """DELETE rows of a Delta table; give ``condition="true"`` to delete every row.

    :param condition: a SQL condition on the table's columns. (templated)
    :param equals: column → value equalities, quoted for you. (templated)
    :param partition_values: restrict to these partitions. (templated)
    """

    operation = "delete"

    def build_options(self, context: Context) -> DeleteOptions:
        return delete_options(
            condition=self.condition, equals=self.equals, partition_values=self.partition_values
        )


class DeltaSqlOperator(DeltaWriteOperator):
    """Run one SQL statement against a Delta table inside the commit loop.

    ``{table}`` in the statement is replaced by the quoted table; an optional source is available as
    the view ``source``.

    :param statement: the statement. (templated)
    :param source: an optional source (see :class:`DeltaAppendOperator`). (templated)
    :param args: named parameters bound by Spark (``:name`` markers). (templated)
    :param op_class: ``read_modify_write`` (default), ``blind_append``, ``maintenance`` or
        ``schema_changing``; decides which conflicts are retried (the job spec's ``op_class``).
    """

    operation = "sql"
    renamed_arguments = {**DeltaWriteOperator.renamed_arguments, "statement_class": "op_class"}
    template_fields: Sequence[str] = (*DeltaWriteOperator.template_fields, "statement", "source", "args")
    template_ext: Sequence[str] = (".sql",)
    advisor_arguments = (*DeltaWriteOperator.advisor_arguments, "op_class")
    template_fields_renderers = {**DeltaWriteOperator.template_fields_renderers, "statement": "sql"}

    def __init__(
        self,
        *,
        statement: str,
        source: SourceArgument | None = None,
        args: dict[str, Any] | None = None,
        op_class: str = OperationClass.READ_MODIFY_WRITE.value,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.statement = statement
        self.source = kept_source(source, task_id=self.task_id)
        self.args = args
        self.op_class = op_class
        parse_time.check_sql(self.task_id, self.table, statement)

    def class_options(self) -> dict[str, Any]:
        return {"op_class": self.op_class}

    def build_source(self, context: Context) -> SourceSpec | None:
        return source_spec(self.source, context=context)

    def build_options(self, context: Context) -> SqlOptions:
        return sql_options(statement=self.statement, args=self.args, op_class=self.op_class)
