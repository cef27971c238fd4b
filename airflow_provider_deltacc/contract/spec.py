"""The typed job spec the engine runs: what to do, on which table, from which source.

Plain data without pyspark, so the Airflow side can build and check it: from typed parts in
:mod:`airflow_provider_deltacc.contract.spec_build`, from the JSON form in
:mod:`airflow_provider_deltacc.contract.spec_parse`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.contract.source_function import SourceFunction
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.txn import TxnIdentity

SOURCE_KINDS: tuple[str, ...] = ("delta", "table", "parquet", "csv", "sql", "rows", "callable")
STORAGE_GUARDS: tuple[str, ...] = ("exclusive_lease", "override")

PartitionValues = tuple[dict[str, Any], ...]

#: Why ``partition_by`` and ``cluster_by`` are refused together; the operators and the spec parser say this.
PARTITION_AND_CLUSTER = (
    "partition_by and cluster_by cannot both be given: a Delta table is either partitioned or "
    "liquid-clustered; keep one of them (cluster_by for new tables, partition_by to match existing ones)"
)


@dataclass(frozen=True)
class SourceSpec:
    """Where the rows to write come from.

    :param kind: ``delta`` (path), ``table`` (catalog name), ``parquet``/``csv`` (path), ``sql`` (a query)
        ``rows`` (inline rows, for tests and small demos) or ``callable`` (the user's own PySpark code: a
        function of the session returning the DataFrame, called afresh in every attempt).
    :param path: the path for ``delta``, ``parquet`` and ``csv``.
    :param name: the catalog name for ``table``.
    :param query: the query for ``sql``.
    :param version: time travel for ``delta``: read this version.
    :param options: reader options (``csv``/``parquet``), e.g. ``{"header": "true"}``.
    :param schema: a DDL schema: required for ``rows``, optional for ``csv``/``parquet``.
    :param rows: the rows for ``rows``: lists in schema order or dicts by column name.
    :param function: the function for ``callable``.
    """

    kind: str
    path: str | None = None
    name: str | None = None
    query: str | None = None
    version: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    schema: str | None = None
    rows: tuple[Any, ...] | None = None
    function: SourceFunction | None = None


@dataclass(frozen=True)
class AppendOptions:
    """Options of ``append``.

    :param create_if_missing: create the table (with ``partition_by`` or ``cluster_by``) when it does not
        exist.
    :param partition_by: partition columns for a table created by this append.
    :param merge_schema: add new source columns to the table (makes the append schema-changing).
    :param cluster_by: liquid-clustering columns for a table created by this append (not with
        ``partition_by``); on an existing table they must match its clustering columns.
    """

    create_if_missing: bool = True
    partition_by: tuple[str, ...] = ()
    merge_schema: bool = False
    cluster_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class OverwritePartitionsOptions:
    """Options of ``overwrite_partitions``.

    :param partition_values: the partitions to replace; None means the source's distinct partitions.
    :param max_partitions: the most distinct source partitions allowed when they are derived.
    """

    partition_values: PartitionValues | None = None
    max_partitions: int = 1000


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause of a MERGE.

    :param action: ``update`` or ``delete`` (matched), ``insert`` (not matched).
    :param condition: an extra SQL condition over ``t`` (target) and ``s`` (source), or None.
    :param assignments: column to SQL expression (``set`` of update, ``values`` of insert); None means all
        columns from the source.
    """

    action: str
    condition: str | None = None
    assignments: dict[str, str] | None = None


DEFAULT_WHEN_MATCHED = (MergeClause("update"),)
DEFAULT_WHEN_NOT_MATCHED = (MergeClause("insert"),)


@dataclass(frozen=True)
class MergeOptions:
    """Options of ``merge``; the target is aliased ``t`` and the source ``s``.

    :param keys: key columns: ON is ``t.k = s.k AND ...``.
    :param condition: an explicit ON condition instead of ``keys``.
    :param when_matched: matched clauses in order.
    :param when_not_matched: not-matched clauses in order.
    :param dedup_order_by: keep one source row per key, the one with the greatest value of this column.
    :param dedup_keys: the key for de-duplication; defaults to ``keys``.
    :param partition_pin: partition columns to pin; ``"auto"`` for all of them; ``"keyed"`` (the default)
        for those that are also merge keys, which never changes what matches; None for no pinning.
        Pinning a partition column that is not a key assumes a row never moves between partitions.
    :param max_pin_values: the most distinct source partitions a pin may list.
    """

    keys: tuple[str, ...] = ()
    condition: str | None = None
    when_matched: tuple[MergeClause, ...] = DEFAULT_WHEN_MATCHED
    when_not_matched: tuple[MergeClause, ...] = DEFAULT_WHEN_NOT_MATCHED
    dedup_order_by: str | None = None
    dedup_keys: tuple[str, ...] = ()
    partition_pin: tuple[str, ...] | Literal["auto", "keyed"] | None = "keyed"
    max_pin_values: int = 1000


@dataclass(frozen=True)
class UpdateOptions:
    """Options of ``update``; at least one of the filters is required.

    :param set: column to SQL expression over the target's columns.
    :param set_values: column to a plain value, quoted as a literal of the column's type.
    :param condition: a SQL condition over the target's columns.
    :param equals: column to value; rows whose column equals the value (``IS NULL`` for null).
    :param partition_values: partitions to restrict (and pin) the update to.
    """

    set: dict[str, str] = field(default_factory=dict)
    set_values: dict[str, Any] = field(default_factory=dict)
    condition: str | None = None
    equals: dict[str, Any] = field(default_factory=dict)
    partition_values: PartitionValues | None = None


@dataclass(frozen=True)
class DeleteOptions:
    """Options of ``delete``; at least one filter is required (use ``condition: "true"`` for all rows).

    :param condition: a SQL condition over the target's columns.
    :param equals: column to value.
    :param partition_values: partitions to restrict (and pin) the delete to.
    """

    condition: str | None = None
    equals: dict[str, Any] = field(default_factory=dict)
    partition_values: PartitionValues | None = None


@dataclass(frozen=True)
class OptimizeOptions:
    """Options of ``optimize``.

    :param partition_values: compact only these partitions.
    :param zorder_by: Z-order by these (non-partition) columns instead of plain compaction.
    :param full: ``OPTIMIZE … FULL``: recluster every file of a liquid-clustered table, not only the files
        incremental clustering picks (clustered tables only; Delta >= 3.3).
    """

    partition_values: PartitionValues | None = None
    zorder_by: tuple[str, ...] = ()
    full: bool = False


@dataclass(frozen=True)
class VacuumOptions:
    """Options of ``vacuum``.

    :param retention_hours: keep removed files younger than this; None uses the table's
        ``delta.deletedFileRetentionDuration``.
    :param force: allow a retention below the table's (disables Delta's safety check for this run).
    :param dry_run: list what would be deleted, delete nothing.
    """

    retention_hours: float | None = None
    force: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class SqlOptions:
    """Options of ``sql``.

    :param statement: one SQL statement; ``{table}`` is replaced by the quoted target table, and the source
        (if any) is the temporary view ``source``.
    :param args: named parameters for ``:name`` markers in the statement (bound by Spark, not formatted).
        Spark 4.2 with Delta 4.4 does not bind them inside Delta DML (DELETE/UPDATE/MERGE fail with
        ``UNBOUND_SQL_PARAMETER``); they work in queries (``INSERT INTO {table} SELECT ... WHERE x = :x``).
    :param op_class: what the statement does, for the retry decision.
    """

    statement: str
    args: dict[str, Any] = field(default_factory=dict)
    op_class: OperationClass = OperationClass.READ_MODIFY_WRITE


OperationOptions = (
    AppendOptions
    | OverwritePartitionsOptions
    | MergeOptions
    | UpdateOptions
    | DeleteOptions
    | OptimizeOptions
    | VacuumOptions
    | SqlOptions
)


@dataclass(frozen=True)
class ReportTrailSpec:
    """How the submitter finds the job's report without its report line (a cluster-mode driver, a lost
    stdout, a driver killed after its commit).

    :param run_token: prefixes the ``userMetadata`` tag of every commit the job makes (see
        :func:`airflow_provider_deltacc.engine.commits.tagging_run`).
    :param report_dir: a directory (path or URI) the driver writes ``<run_token>.json`` to, or None.
    """

    run_token: str
    report_dir: str | None = None


@dataclass(frozen=True)
class KnownSnapshot:
    """The table's latest snapshot as the worker's read of its log showed it before the job started (set by
    the provider): the first attempt plans from it instead of asking Spark. A check it fails is made again
    on Spark's read; Delta still checks at commit what it checks.

    :param version: the table version read.
    :param partition_columns: the partition columns, in table order.
    :param schema: the table schema, as the log's JSON (``schemaString``).
    :param txn_unrecorded: the job's txn identity is not recorded in it: the first attempt need not read the
        recorded versions (a Spark job over the log) before it calls a source function.
    """

    version: int
    partition_columns: tuple[str, ...]
    schema: str
    txn_unrecorded: bool = False


@dataclass(frozen=True)
class TurnServiceSpec:
    """Where a Spark driver asks for its turns: the writer's turn service in the Airflow worker (see
    :mod:`airflow_provider_deltacc.turns.service`), for a commit loop that runs in the driver.

    :param url: the service's ``http://host:port`` address.
    :param token: the secret the driver shows on every request (the spec file is the only place it is in).
    :param timeout_s: the longest wait for one turn; a request waits that long plus a margin.
    :param fenced: the service also answers whether the lease that keeps this write safe still holds
        (:class:`~airflow_provider_deltacc.leases.fence.LeaseFence`): the driver asks it right before each
        attempt's write commits, and a service that does not answer then counts as a lapsed lease.
    """

    url: str
    token: str = field(repr=False)
    timeout_s: float = 1800.0
    fenced: bool = False


@dataclass(frozen=True)
class JobSpec:
    """One job: an operation on a table.

    :param operation: one of :data:`~airflow_provider_deltacc.contract.operations.OPERATIONS`.
    :param table: a path or a catalog name.
    :param options: the operation's options.
    :param source: the source, for operations that read one.
    :param commit_retry: in-job conflict retries (the spec's ``commit_retry``).
    :param txn: the idempotent-write identity, or None.
    :param spark_conf: runtime Spark confs for this operation.
    :param storage_guard: how concurrent writers are kept safe on storage without a multi-writer log store
        (see :mod:`~airflow_provider_deltacc.contract.storage_safety`): ``exclusive_lease`` (the operator
        holds an exclusive lease on the table), ``override`` (the caller accepts the risk), or None.
    :param report_trail: the run token and report directory, or None.
    :param turn_service: where the commit loop asks for its turns when it runs in a Spark driver, or None.
    :param known_snapshot: the table's snapshot as the worker's read of its log showed it, or None.
    """

    operation: str
    table: Table
    options: OperationOptions
    source: SourceSpec | None = None
    commit_retry: CommitRetryPolicy = field(default_factory=CommitRetryPolicy)
    txn: TxnIdentity | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    storage_guard: str | None = None
    report_trail: ReportTrailSpec | None = None
    turn_service: TurnServiceSpec | None = None
    known_snapshot: KnownSnapshot | None = None
