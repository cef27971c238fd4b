"""Read a Delta table's latest snapshot on Spark.

The snapshot is read by the session's backend (:mod:`airflow_provider_deltacc.engine.backend`): the JVM
``DeltaLog`` on a classic session, the server's ``DESCRIBE TABLE EXTENDED`` on a Spark Connect session.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.table import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = [
    "TableState",
    "check_state",
    "expression_frame",
    "first_attempt_state",
    "provider",
    "read_table_state",
    "read_table_state_if_exists",
    "require_delta_table",
    "require_table_state",
    "required_first_attempt_state",
    "table_exists",
    "table_frame",
]


def table_frame(spark: SparkSession, table: Table) -> DataFrame:
    """Return the table's latest data as a DataFrame (for analysing expressions against its columns).

    :param spark: the session.
    :param table: the table.
    """
    return spark.read.format("delta").load(table.name) if table.is_path else spark.read.table(table.name)


def expression_frame(spark: SparkSession, table: Table, state: TableState) -> DataFrame:
    """A DataFrame with the table's columns, to analyse expressions against: an empty one of the worker's
    schema when the state is the worker's (no snapshot load on Spark; an expression it cannot resolve fails
    the build, which runs again on Spark's read), else :func:`table_frame`.

    :param spark: the session.
    :param table: the table.
    :param state: the snapshot the operation plans from.
    """
    return spark.createDataFrame([], state.schema) if state.read_by_worker else table_frame(spark, table)


@dataclass(frozen=True)
class TableState:
    """One snapshot of a Delta table.

    :param partition_columns: the partition columns, in table order.
    :param schema: the table schema.
    :param read_version: returns the snapshot's table version; called once, when :attr:`version` is first
        read. A Spark Connect session pays a slow ``DESCRIBE HISTORY`` for it, which a plain write never
        needs (see :func:`~airflow_provider_deltacc.engine.commits.find_tagged_commits`).
    :param read_properties: returns the table properties (``delta.*`` and user ones); called once, when
        :attr:`properties` is first read (only VACUUM needs them).
    :param txn_versions: recorded idempotent-write versions, for the app ids asked for.
    :param read_by_worker: the worker's read of the log, not Spark's.
    :param txn_unrecorded: the worker's read showed the job's txn identity unrecorded.
    """

    partition_columns: tuple[str, ...]
    schema: StructType
    read_version: Callable[[], int]
    read_properties: Callable[[], Mapping[str, str]] = dict
    txn_versions: dict[str, int] = field(default_factory=dict)
    read_by_worker: bool = False
    txn_unrecorded: bool = False

    @cached_property
    def version(self) -> int:
        """The snapshot's table version."""
        return int(self.read_version())

    @property
    def known_version(self) -> int | None:
        """The version when it is already known (read, or given by the snapshot), else None: no read."""
        known = self.__dict__.get("version")
        return None if known is None else int(known)

    @cached_property
    def properties(self) -> dict[str, str]:
        """The table properties (``delta.*`` and user ones)."""
        return dict(self.read_properties())

    def column_type(self, name: str) -> DataType | None:
        """Return the type of a top-level column (case-insensitive), or None.

        :param name: the column name.
        """
        for struct_field in self.schema.fields:
            if struct_field.name.lower() == name.lower():
                return struct_field.dataType
        return None

    def column_name(self, name: str) -> str | None:
        """Return the table's spelling of a top-level column (case-insensitive), or None.

        :param name: the column name.
        """
        for struct_field in self.schema.fields:
            if struct_field.name.lower() == name.lower():
                return struct_field.name
        return None

    def recorded_txn_version(self, app_id: str) -> int:
        """Return the version recorded for ``app_id`` in this snapshot, or -1.

        :param app_id: an app id passed to :func:`read_table_state`.
        """
        return self.txn_versions.get(app_id, -1)


def table_exists(spark: SparkSession, table: Table) -> bool:
    """Return True when the table exists and is a Delta table.

    :param spark: the session.
    :param table: the table.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    return backend_for(spark).table_exists(table)


def require_delta_table(spark: SparkSession, table: Table, field_name: str = "table") -> None:
    """Raise an :class:`InputError` that says why the table cannot be written, if it cannot.

    :param spark: the session.
    :param table: the table.
    :param field_name: the spec field, for the error.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    backend = backend_for(spark)
    if table.is_path:
        if backend.table_exists(table):
            return
        if backend.path_exists(table.name):
            raise InputError(
                field_name, table.name, "the path exists but is not a Delta table (no _delta_log)"
            )
        raise InputError(field_name, table.name, "no table at this path; create it first (e.g. with append)")
    if not spark.catalog.tableExists(table.name):
        raise InputError(field_name, table.name, "no such catalog table; check the name or create it first")
    found = provider(spark, table)
    if found != "delta":
        raise InputError(field_name, table.name, f"is a {found or 'non-Delta'} table, not a Delta table")


def read_table_state_if_exists(
    spark: SparkSession, table: Table, app_ids: tuple[str, ...] = ()
) -> TableState | None:
    """Read the latest snapshot of a Delta table; None when there is no Delta table there.

    :param spark: the session.
    :param table: the table.
    :param app_ids: app ids whose recorded txn versions to read from the same snapshot.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    return backend_for(spark).state_if_exists(table, app_ids)


def require_table_state(spark: SparkSession, table: Table, field_name: str = "table") -> TableState:
    """Read the latest snapshot of the table an operation writes; say why when it cannot be written.

    :param spark: the session.
    :param table: the table.
    :param field_name: the spec field, for the error.
    :raises InputError: when there is no Delta table (see :func:`require_delta_table`).
    """
    state = read_table_state_if_exists(spark, table)
    if state is None:
        require_delta_table(spark, table, field_name)
        raise InputError(field_name, table.name, "the table disappeared or is not a Delta table")
    return state


def first_attempt_state(spark: SparkSession, spec: JobSpec) -> TableState | None:
    """The snapshot a job's first attempt plans from: ``spec.known_snapshot`` (the worker's read of the
    log), else Spark's read (None: no Delta table).

    :param spark: the operation's session.
    :param spec: the job spec.
    """
    return _known_state(spark, spec) or read_table_state_if_exists(spark, spec.table)


def required_first_attempt_state(spark: SparkSession, spec: JobSpec) -> TableState:
    """:func:`first_attempt_state` of a table that must exist (see :func:`require_table_state`)."""
    return _known_state(spark, spec) or require_table_state(spark, spec.table)


def _known_state(spark: SparkSession, spec: JobSpec) -> TableState | None:
    known = spec.known_snapshot
    if known is None:
        return None
    from pyspark.sql.types import StructType

    try:
        schema = StructType.fromJson(json.loads(known.schema))
    except Exception:  # a type this pyspark does not know: Spark's read names it
        return None
    state = TableState(
        known.partition_columns,
        schema,
        lambda: known.version,
        lambda: read_table_state(spark, spec.table).properties,  # not the worker's: none plans from them
        read_by_worker=True,
        txn_unrecorded=known.txn_unrecorded,
    )
    state.version  # noqa: B018 - known: the search for the attempt's commit starts after it
    return state


def check_state(
    spark: SparkSession, table: Table, state: TableState, check: Callable[[TableState], None]
) -> None:
    """``check(state)``; when that fails on the worker's read, again on Spark's own (the table may have
    changed since), which decides.

    :param check: raises :class:`InputError` when the operation does not fit the snapshot.
    """
    try:
        check(state)
    except InputError:
        fresh = read_table_state_if_exists(spark, table) if state.read_by_worker else None
        if fresh is None:
            raise
        check(fresh)


def read_table_state(spark: SparkSession, table: Table, app_ids: tuple[str, ...] = ()) -> TableState:
    """Read the latest snapshot of a Delta table.

    :param spark: the session.
    :param table: the table (it must exist; see :func:`require_delta_table`).
    :param app_ids: app ids whose recorded txn versions to read from the same snapshot.
    """
    from airflow_provider_deltacc.engine.backend import backend_for

    return backend_for(spark).read_table_state(table, app_ids)


def provider(spark: SparkSession, table: Table) -> str | None:
    """The data source of a catalog table (``delta``, ``parquet``, ...), from ``DESCRIBE TABLE EXTENDED``.

    :param spark: the session.
    :param table: a catalog name.
    """
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table.sql}").collect()
    for row in rows:
        if str(row[0]).strip().lower() == "provider":
            return str(row[1]).strip().lower()
    return None
