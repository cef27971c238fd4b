"""Name a target table (a path or a catalog name) and read its latest Delta snapshot.

A table string containing ``/`` is a path (``/data/orders``, ``s3a://bucket/orders``); anything else must be a
catalog name of one to three plain parts (``orders``, ``sales.orders``, ``cat.sales.orders``).

The snapshot is read through the JVM ``DeltaLog`` (via py4j): the same Delta code, storage settings and
catalog that will commit, and one consistent snapshot for version, metadata and recorded txn versions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.errors import InputError
from airflow_provider_deltacc.engine.jvm import DELTA_TABLE, HADOOP_PATH, java_class, scala_none
from airflow_provider_deltacc.engine.literals import quote_identifier

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructType

CATALOG_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*){0,2}")


def is_path(table: str) -> bool:
    """Return True when ``table`` names a path rather than a catalog table.

    :param table: the table as given in the spec.
    """
    return "/" in table or "\\" in table


def check_table_name(table: Any, field_name: str = "table") -> str:
    """Validate a table string without touching Spark and return it.

    :param table: the value from the spec.
    :param field_name: the spec field, for the error.
    :raises InputError: if it is neither a path nor a plain catalog name.
    """
    if not isinstance(table, str) or not table.strip():
        raise InputError(field_name, table, "must be a non-empty string: a table path or a catalog name")
    if "${" in table:
        raise InputError(field_name, table, "must not contain '${' (Spark would substitute it)")
    if not is_path(table) and not CATALOG_NAME_RE.fullmatch(table):
        raise InputError(
            field_name,
            table,
            "is neither a path (it has no '/') nor a catalog name like 'db.table' of letters, digits and _",
        )
    return table


def table_sql(table: str) -> str:
    """Return a SQL reference to the table: ``delta.`<path>``` or a backticked catalog name.

    :param table: a path or a catalog name (see :func:`check_table_name`).
    """
    if is_path(table):
        return f"delta.{quote_identifier(table)}"
    return ".".join(quote_identifier(part) for part in table.split("."))


def delta_table(spark: SparkSession, table: str) -> DeltaTable:
    """Return a fresh ``DeltaTable`` handle for a path or a catalog name.

    :param spark: the session.
    :param table: the table.
    """
    from delta.tables import DeltaTable

    return DeltaTable(spark, _jvm_delta_table(spark, table))


@dataclass(frozen=True)
class TableState:
    """One snapshot of a Delta table.

    :param version: the snapshot's table version.
    :param partition_columns: the partition columns, in table order.
    :param schema: the table schema.
    :param properties: the table properties (``delta.*`` and user ones).
    :param txn_versions: recorded idempotent-write versions, for the app ids asked for.
    """

    version: int
    partition_columns: tuple[str, ...]
    schema: StructType
    properties: dict[str, str] = field(default_factory=dict)
    txn_versions: dict[str, int] = field(default_factory=dict)

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


def table_exists(spark: SparkSession, table: str) -> bool:
    """Return True when the table exists and is a Delta table.

    :param spark: the session.
    :param table: the table.
    """
    if is_path(table):
        return _is_delta_path(spark, table)
    if not spark.catalog.tableExists(table):
        return False
    return _provider(spark, table) == "delta"


def require_delta_table(spark: SparkSession, table: str, field_name: str = "table") -> None:
    """Raise an :class:`InputError` that says why the table cannot be written, if it cannot.

    :param spark: the session.
    :param table: the table.
    :param field_name: the spec field, for the error.
    """
    if is_path(table):
        if _is_delta_path(spark, table):
            return
        if _path_exists(spark, table):
            raise InputError(field_name, table, "the path exists but is not a Delta table (no _delta_log)")
        raise InputError(field_name, table, "no table at this path; create it first (e.g. with append)")
    if not spark.catalog.tableExists(table):
        raise InputError(field_name, table, "no such catalog table; check the name or create it first")
    provider = _provider(spark, table)
    if provider != "delta":
        raise InputError(field_name, table, f"is a {provider or 'non-Delta'} table, not a Delta table")


def read_table_state(spark: SparkSession, table: str, app_ids: tuple[str, ...] = ()) -> TableState:
    """Read the latest snapshot of a Delta table.

    :param spark: the session.
    :param table: the table (it must exist; see :func:`require_delta_table`).
    :param app_ids: app ids whose recorded txn versions to read from the same snapshot.
    """
    from pyspark.sql.types import StructType

    snapshot = _fresh_snapshot(jvm_delta_log(spark, table), scala_none(spark))
    metadata = json.loads(snapshot.metadata().json())["metaData"]
    txn_versions: dict[str, int] = {}
    # Snapshot.transactions() runs a Spark job over the whole table state: only pay for it when asked.
    recorded: Any = snapshot.transactions() if app_ids else None
    for app_id in app_ids:
        found = recorded.get(app_id)
        if found.isDefined():
            txn_versions[app_id] = int(found.get())
    return TableState(
        version=int(snapshot.version()),
        partition_columns=tuple(metadata.get("partitionColumns") or ()),
        schema=StructType.fromJson(json.loads(metadata["schemaString"])),
        properties=dict(metadata.get("configuration") or {}),
        txn_versions=txn_versions,
    )


def jvm_delta_log(spark: SparkSession, table: str) -> Any:
    """The JVM ``DeltaLog`` of a path or catalog table.

    :param spark: the session.
    :param table: the table.
    """
    return _jvm_delta_table(spark, table).deltaLog()


def _jvm_delta_table(spark: SparkSession, table: str) -> Any:
    jspark: Any = spark._jsparkSession
    jtables = java_class(spark, DELTA_TABLE)
    return jtables.forPath(jspark, table) if is_path(table) else jtables.forName(jspark, table)


def call_known_signature(method: Any, shapes: tuple[tuple[Any, ...], ...]) -> Any:
    """Call a JVM method with the first argument list it accepts.

    Scala default arguments are invisible to py4j and Delta's internal signatures change arity across
    releases, so callers list the known shapes, newest first. A Java exception from the call itself is
    raised, not taken for a wrong signature.

    :param method: the py4j method.
    :param shapes: the argument lists to try.
    :raises Py4JError: when no shape matches.
    """
    from py4j.protocol import Py4JError, Py4JJavaError

    for args in shapes:
        try:
            return method(*args)
        except Py4JJavaError:
            raise
        except Py4JError:
            continue
    raise Py4JError(f"{method} has none of the known signatures {shapes}")


def _fresh_snapshot(delta_log: Any, none: Any) -> Any:
    # DeltaLog.update has 3 parameters in Delta 4.x.
    return call_known_signature(delta_log.update, ((False, none, none), (False, none), (False,), ()))


def _is_delta_path(spark: SparkSession, path: str) -> bool:
    return bool(java_class(spark, DELTA_TABLE).isDeltaTable(spark._jsparkSession, path))


def _path_exists(spark: SparkSession, path: str) -> bool:
    jspark: Any = spark._jsparkSession
    hadoop_path = java_class(spark, HADOOP_PATH)(path)
    fs = hadoop_path.getFileSystem(jspark.sessionState().newHadoopConf())
    return bool(fs.exists(hadoop_path))


def _provider(spark: SparkSession, table: str) -> str | None:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {table_sql(table)}").collect()
    for row in rows:
        if str(row[0]).strip().lower() == "provider":
            return str(row[1]).strip().lower()
    return None
