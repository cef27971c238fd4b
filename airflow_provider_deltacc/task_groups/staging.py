"""``staging_append_then_merge``: concurrent sources land without conflicts, then ONE MERGE applies them.

Direct concurrent MERGEs into one table conflict whenever they read the same partitions (OSS Delta runs
them at Serializable isolation: even a blind append fails a MERGE that read its partition), and every
conflict wastes a whole read-modify-write. Blind appends into a staging table never conflict with each
other, and a single MERGE has nobody to conflict with. The group:

``create_staging``, ``create_target`` (optional)
    create both tables once if they are missing (an empty append with a fixed txn identity per table), so
    the concurrent appends never race to create the staging table (a fatal ``PROTOCOL_CHANGED``).
``plan_batches``
    gives every source of this run a batch id ``<dag_id>/<group_id>/<run_id>/<index>`` and tags the source
    with it (a ``batch_id`` column); deterministic, so a retried plan yields the same ids.
``append_batch`` (dynamically mapped, one per source)
    blind appends into staging, partitioned by the batch column; each has its own exactly-once txn
    identity, so a retried append never lands twice.
``merge_batches``
    one MERGE into the target; the source is a query over staging filtered to THIS run's batch ids
    (quoted literals: a late batch of another run is never consumed), de-duplicated to the latest row per
    key by ``dedup_order_by`` and pinned to the partitions the batches touch. It has its own txn identity:
    re-running it after it committed is reported as a skipped duplicate, and re-running it after the cleanup
    finds an empty source; it never merges twice.
``cleanup_batches``
    ``DELETE`` of exactly the consumed batches (their staging partitions), never a blind truncate, so a
    batch that landed late, or belongs to another run, stays for its own MERGE. Re-running it is harmless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import refuse_renamed
from airflow_provider_deltacc.contract.literals import quote_identifier
from airflow_provider_deltacc.task_groups.staging_batches import DEFAULT_BATCH_COLUMN, plan_batches_for
from airflow_provider_deltacc.task_groups.staging_checks import FACTORY, CheckedColumns, check_arguments

if TYPE_CHECKING:
    from airflow.sdk import TaskGroup, XComArg

    from airflow_provider_deltacc.operators import DeltaAppendOperator

#: The group's arguments by their names before the rename -> their names now.
_RENAMED = {"partition_columns": "partition_by", "cluster_columns": "cluster_by"}


def staging_append_then_merge(
    *,
    sources: Sequence[str | dict[str, Any]] | Any,
    staging_table: str,
    target_table: str,
    schema: str,
    keys: Sequence[str],
    partition_by: Sequence[str] | None = None,
    cluster_by: Sequence[str] | None = None,
    dedup_order_by: str | None = None,
    latest_wins: bool = True,
    schema_evolution: bool = False,
    partition_pin: str | Sequence[str] | None = "keyed",
    batch_column: str = DEFAULT_BATCH_COLUMN,
    create_tables: bool = True,
    append_commit_retry: dict[str, Any] | None = None,
    merge_commit_retry: dict[str, Any] | None = None,
    lease_store_conn_id: str | None = None,
    operator_kwargs: Mapping[str, Any] | None = None,
    group_id: str = "staging_append_then_merge",
    tooltip: str = "",
    **renamed: Any,
) -> TaskGroup:
    """Build the staging-append-then-merge task group in the current DAG (see the module docstring).

    Call it inside a DAG (``with DAG(...)`` or a ``@dag`` function), like an operator; it returns the
    :class:`~airflow.sdk.TaskGroup`, so ``land >> group >> check`` works. Everything is validated here, at
    parse time; the errors name the argument.

    :param sources: one source per concurrent append: a list, or the output of an upstream task (an
        ``XComArg`` resolving to a list). Each is what ``DeltaAppendOperator(source=...)`` takes: a SQL query,
        a Delta/parquet/CSV path, a catalog table name, or the dict form (``delta``, ``table``, ``parquet``,
        ``csv`` without options, ``sql``, ``rows``). An empty list skips the group's appends, MERGE and
        cleanup.
    :param staging_table: the staging Delta table (path or catalog name), partitioned by ``batch_column``.
        It can be shared by several DAG runs: each run only ever reads and deletes its own batches.
    :param target_table: the table the batches are merged into.
    :param schema: the rows' columns as a DDL string (``"order_id BIGINT, day DATE, ..."``), without the
        batch column; used to create missing tables and to check the column arguments.
    :param keys: the MERGE keys (``t.k = s.k AND ...``); they identify a row of the target.
    :param partition_by: the target's partition columns (used when the group creates it, as
        ``DeltaAppendOperator(partition_by=...)``). Every one of them must be a key with the default
        ``partition_pin="keyed"``, so the MERGE is pinned to the partitions the batches touch.
    :param cluster_by: liquid-clustering columns of the target (used when the group creates it, as
        ``DeltaAppendOperator(cluster_by=...)``); not with ``partition_by``. A clustered target has no
        partitions to pin, and in OSS Delta predicates on its clustering columns do not keep writers apart:
        this group's one MERGE per run is what protects it (see ``docs/clustering.md``), so ``partition_pin``
        must stay ``"keyed"`` or None.
    :param dedup_order_by: keep only the latest staged row per key, by this column (a timestamp or a
        sequence number); None keeps them all (then two staged rows with one key fail the MERGE).
    :param latest_wins: with ``dedup_order_by``, update a target row only when the staged row is not older
        (``s.col >= t.col``), so a late batch never overwrites newer data.
    :param schema_evolution: let new source columns through (appends with ``merge_schema`` and a MERGE with
        Delta's ``schema.autoMerge``). Off by default: a source with an unknown column fails its append.
    :param partition_pin: the MERGE's ``partition_pin`` (``"keyed"``, ``"auto"``, a list or None).
    :param batch_column: the name of the batch id column of the staging table.
    :param create_tables: create the staging and target tables when missing (``create_staging``,
        ``create_target``); False expects both to exist.
    :param append_commit_retry: ``commit_retry`` of the appends.
    :param merge_commit_retry: ``commit_retry`` of the MERGE and the cleanup.
    :param lease_store_conn_id: the lease store's ``postgres`` or ``sqlite`` connection, for every Delta
        operator of the group; None reads ``[deltacc] lease_store_conn_id`` (then the older
        ``lease_store_url``, which ``operator_kwargs`` may carry).
    :param operator_kwargs: extra arguments for every Delta operator of the group (``execution_mode``,
        ``conn_id``, ``spark_conf``, ``retries``, ``lease_store_url``, ...). DAG ``default_args`` apply too.
    :param group_id: the task group's id.
    :param tooltip: the task group's tooltip in the UI.
    :returns: the task group.
    :raises DeltaCCInputError: at parse time, naming the bad argument.
    :raises TypeError: an unknown argument, or one by its name before the rename (``partition_columns``,
        ``cluster_columns``).
    """
    refuse_renamed(renamed, _RENAMED, owner=FACTORY)
    if renamed:
        raise TypeError(f"{FACTORY}() got unexpected keyword arguments {sorted(renamed)}")
    return StagingGroup(
        sources=sources,
        staging_table=staging_table,
        target_table=target_table,
        schema=schema,
        keys=keys,
        partition_by=partition_by,
        cluster_by=cluster_by,
        dedup_order_by=dedup_order_by,
        latest_wins=latest_wins,
        schema_evolution=schema_evolution,
        partition_pin=partition_pin,
        batch_column=batch_column,
        create_tables=create_tables,
        append_commit_retry=append_commit_retry,
        merge_commit_retry=merge_commit_retry,
        lease_store_conn_id=lease_store_conn_id,
        operator_kwargs=operator_kwargs,
        group_id=group_id,
        tooltip=tooltip,
    ).build()


@dataclass(frozen=True, kw_only=True)
class StagingGroup:
    """One call of :func:`staging_append_then_merge`: its arguments (documented there), checked at parse
    time (:func:`~airflow_provider_deltacc.task_groups.staging_checks.check_arguments`), and the task group
    they build."""

    sources: Sequence[str | dict[str, Any]] | Any
    staging_table: str
    target_table: str
    schema: str
    keys: Sequence[str]
    partition_by: Sequence[str] | None
    cluster_by: Sequence[str] | None
    dedup_order_by: str | None
    latest_wins: bool
    schema_evolution: bool
    partition_pin: str | Sequence[str] | None
    batch_column: str
    create_tables: bool
    append_commit_retry: dict[str, Any] | None
    merge_commit_retry: dict[str, Any] | None
    lease_store_conn_id: str | None
    operator_kwargs: Mapping[str, Any] | None
    group_id: str
    tooltip: str

    def build(self) -> TaskGroup:
        """Check the arguments, then build plan, appends, MERGE and cleanup (and the tables' creation) in the
        current DAG.

        :raises DeltaCCInputError: naming the bad argument.
        """
        from airflow.sdk import TaskGroup

        from airflow_provider_deltacc.operators import (
            DeltaAppendOperator,
            DeltaDeleteOperator,
            DeltaMergeOperator,
        )

        columns = check_arguments(self)
        extra, merge_extra = self._operator_arguments()
        tooltip = self.tooltip or "staging appends, one MERGE, cleanup"
        with TaskGroup(group_id=self.group_id, tooltip=tooltip) as group:
            plan = self._plan_batches(group.group_id or self.group_id)
            appends = DeltaAppendOperator.partial(
                task_id="append_batch",
                table=self.staging_table,
                create_if_missing=False,
                merge_schema=self.schema_evolution,
                commit_retry=self.append_commit_retry,
                emit_asset=False,  # staging is internal: only the MERGE emits, for the target
                **extra,
            ).expand(source=plan)
            pin = self.partition_pin
            merge = DeltaMergeOperator(
                task_id="merge_batches",
                table=self.target_table,
                source=plan["merge_source"],  # type: ignore[index]
                keys=list(columns.keys),
                partition_pin=pin if isinstance(pin, str | None) else list(pin),
                dedup_order_by=self.dedup_order_by,
                when_matched=_when_matched(self.dedup_order_by, self.latest_wins),
                commit_retry=self.merge_commit_retry,
                **merge_extra,
            )
            cleanup = DeltaDeleteOperator(
                task_id="cleanup_batches",
                table=self.staging_table,
                partition_values=plan["cleanup_partitions"],  # type: ignore[index]
                commit_retry=self.merge_commit_retry,
                emit_asset=False,
                **extra,
            )
            appends >> merge >> cleanup
            if self.create_tables:
                create_staging, create_target = self._create_tables(columns, extra)
                create_staging >> appends
                create_target >> merge
        return group

    def _operator_arguments(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The extra arguments of the Delta operators: of the appends, creations and cleanup, and of the
        MERGE (the only one that declares an asset, the target's; with schema auto-merge on schema
        evolution)."""
        extra = dict(self.operator_kwargs or {})
        if self.lease_store_conn_id is not None:  # else DAG default_args may still set it
            extra["lease_store_conn_id"] = self.lease_store_conn_id
        merge_extra = dict(extra)
        extra.pop("emit_asset", None)  # only the MERGE declares an asset (the target's)
        if self.schema_evolution:
            merge_extra["spark_conf"] = {
                **(extra.get("spark_conf") or {}),
                "spark.databricks.delta.schema.autoMerge.enabled": "true",
            }
        return extra, merge_extra

    def _plan_batches(self, full_group_id: str) -> XComArg:
        """The ``plan_batches`` task over this group's sources; its output, mapped over by the appends.

        :param full_group_id: the group's id in the DAG (its parents' ids included).
        """
        from airflow.sdk import task

        staging_table, batch_column = self.staging_table, self.batch_column

        @task(task_id="plan_batches")
        def plan_batches(sources: Any, run_id: str | None = None, ti: Any = None) -> list[dict[str, Any]]:
            """Give every source of this run its batch id. Returns the tagged sources (mapped over by the
            appends) and pushes the MERGE source and the cleanup's partitions as XComs of their own."""
            plan = plan_batches_for(
                list(sources or []),
                staging_table=staging_table,
                batch_column=batch_column,
                batch_prefix=f"{ti.dag_id}/{full_group_id}/{run_id}",
            )
            for key in ("batch_ids", "merge_source", "cleanup_partitions"):
                ti.xcom_push(key=key, value=plan[key])
            appends: list[dict[str, Any]] = plan["appends"]
            return appends

        output: XComArg = plan_batches(self.sources)
        return output

    def _create_tables(
        self, columns: CheckedColumns, extra: dict[str, Any]
    ) -> tuple[DeltaAppendOperator, DeltaAppendOperator]:
        """The two tasks that create the staging and the target table when they are missing: an empty
        append each, with a fixed txn identity per table, so that they commit once.

        :param columns: the checked column arguments.
        :param extra: the operators' extra arguments.
        """
        from airflow_provider_deltacc.operators import DeltaAppendOperator

        create_staging = DeltaAppendOperator(
            task_id="create_staging",
            table=self.staging_table,
            source={
                "kind": "rows",
                "rows": [],
                "schema": f"{self.schema}, {quote_identifier(self.batch_column)} STRING",
            },
            partition_by=[self.batch_column],
            txn_app_id=create_identity(self.staging_table),
            txn_version=1,
            emit_asset=False,
            **extra,
        )
        create_target = DeltaAppendOperator(
            task_id="create_target",
            table=self.target_table,
            source={"kind": "rows", "rows": [], "schema": self.schema},
            partition_by=list(columns.partition_by) or None,
            cluster_by=list(columns.cluster_by) or None,
            txn_app_id=create_identity(self.target_table),
            txn_version=1,
            emit_asset=False,  # an empty create is no new data
            **extra,
        )
        return create_staging, create_target


def create_identity(table: str) -> str:
    """The fixed txn app id of the empty append that creates ``table``: it commits once per table."""
    return f"deltacc/create-if-missing/{table}"


def _when_matched(dedup_order_by: str | None, latest_wins: bool) -> list[dict[str, Any]] | None:
    if dedup_order_by is None or not latest_wins:
        return None  # the operator's default: update every column
    column = quote_identifier(dedup_order_by)
    return [{"action": "update", "condition": f"t.{column} IS NULL OR s.{column} >= t.{column}"}]
