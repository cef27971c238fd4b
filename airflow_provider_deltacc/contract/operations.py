"""The one table of operations: what each job-spec operation is, for retries, leases, the gate and the matrix.

Standard library only: the engine, the Spark job, the operators, the write windows, the conflict matrix and
the advisor all import it (DAG parsing too, so it stays cheap).

- :class:`OperationClass`: what an operation does, as far as retrying a conflict is concerned.
- :class:`OpKind`: what the conflict checker sees it run (the conflict matrix's rows and columns; their
  footprints live in :mod:`airflow_provider_deltacc.conflict_matrix.ops`).
- :data:`OPERATIONS`: job-spec operation name -> :class:`Operation`.
- :func:`operation_class` and :func:`op_kind`: the class and the kind of one job spec, including the cases
  its options decide (a schema-evolving append or MERGE, a Z-ordered OPTIMIZE, a SQL statement).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from airflow_provider_deltacc.contract.exceptions import SqlTextError
from airflow_provider_deltacc.contract.sql_text import code_text, main_statement, split_statements


class OperationClass(StrEnum):
    """What an operation does to a table, as far as retrying a conflict is concerned."""

    BLIND_APPEND = "blind_append"
    READ_MODIFY_WRITE = "read_modify_write"
    MAINTENANCE = "maintenance"
    SCHEMA_CHANGING = "schema_changing"


class OpKind(StrEnum):
    """A write operation on a Delta table, as the conflict checker (and so the conflict matrix) sees it.

    - ``BLIND_APPEND``: ``df.write.mode("append")`` / ``INSERT INTO … VALUES`` / ``INSERT INTO t SELECT … FROM
      other`` — adds files and reads nothing from the target (the seeds' "INSERT").
    - ``INSERT_SELECT``: an INSERT whose query reads the target table (a subquery or condition on it);
      Databricks: "support the same concurrency as MERGE".
    - ``OVERWRITE``: full overwrite, ``replaceWhere`` or dynamic partition overwrite: reads and removes the
      files it replaces, like a DELETE followed by an INSERT.
    - ``UPDATE``, ``DELETE``, ``MERGE``: read-modify-write DML (the seeds' "UPDATE, DELETE, MERGE INTO").
    - ``OPTIMIZE``: bin-packing compaction (also a manual ``dataChange=false`` rewrite): the seeds'
      "COMPACTION"/"OPTIMIZE".
    - ``OPTIMIZE_ZORDER``: ``OPTIMIZE … ZORDER BY``; Databricks' tables treat it apart from plain OPTIMIZE.
    - ``VACUUM``: deletes unreferenced files; takes no part in optimistic concurrency.
    - ``SCHEMA_CHANGE``: ALTER TABLE (ADD COLUMNS, …), schema evolution, any table property change Delta does
      not allow-list: anything committing a Metadata (or Protocol) action that fails concurrent writers. A
      schema-evolving write (``mergeSchema``) is both: look up the pair as ``SCHEMA_CHANGE`` for what it does
      to others and as its data op for its own exposure.
    - ``ENABLE_FEATURE``: ``ALTER TABLE … SET TBLPROPERTIES`` that only enables a table feature through a
      property Delta's conflict checker allow-lists (:data:`ALLOW_LISTED_PROPERTIES`, e.g.
      ``delta.enableDeletionVectors = true``). OSS Delta 4.1+ lets a concurrent writer that changes no
      metadata itself commit past it; Delta <= 4.0 and Databricks' documented tables treat it as a
      ``SCHEMA_CHANGE``.
    - ``CLUSTER_BY``: ``ALTER TABLE … CLUSTER BY``. On a table that is not clustered yet it enables the
      clustering table feature (a Protocol change: its footprint is a schema change's); on a liquid-clustered
      table it commits only the ``delta.clustering`` domain metadata, which fails no writer (the
      ``clustered`` adjustment in :mod:`airflow_provider_deltacc.conflict_matrix.clustered`).
    """

    BLIND_APPEND = "blind_append"
    INSERT_SELECT = "insert_select"
    OVERWRITE = "overwrite"
    UPDATE = "update"
    DELETE = "delete"
    MERGE = "merge"
    OPTIMIZE = "optimize"
    OPTIMIZE_ZORDER = "optimize_zorder"
    VACUUM = "vacuum"
    SCHEMA_CHANGE = "schema_change"
    CLUSTER_BY = "cluster_by"
    ENABLE_FEATURE = "enable_feature"


#: The table properties whose change Delta 4.1+'s conflict checker resolves instead of failing a concurrent
#: writer (``ConflictChecker.metadataConfigurationChangeAllowList`` and the values it accepts), as
#: property -> the value that enables the feature. Unsetting a property, another value or any other property
#: (and any schema change) still fails every concurrent writer.
ALLOW_LISTED_PROPERTIES: dict[str, str] = {
    "delta.enableDeletionVectors": "true",
    "delta.enableRowTracking": "true",
    "delta.columnMapping.mode": "name",
    "delta.checkpointPolicy": "v2",
    "delta.enableInCommitTimestamps": "true",
}

_SET_PROPERTIES = re.compile(
    r"^\s*alter\s+table\s+.+?\s+set\s+tblproperties\s*\((?P<body>[^()]*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_PROPERTY = re.compile(r"\s*(['\"`]?)(?P<key>[\w.]+)\1\s*=\s*(['\"]?)(?P<value>[\w.]*)\3\s*")


def enables_allow_listed_feature(statement: str) -> bool:
    """True when ``statement`` is an ``ALTER TABLE … SET TBLPROPERTIES`` that only sets properties of
    :data:`ALLOW_LISTED_PROPERTIES` to their enabling values (an ``ENABLE_FEATURE``).

    :param statement: a SQL statement.
    """
    match = _SET_PROPERTIES.match(statement_text(statement, literals=True))
    if match is None:
        return False
    for assignment in match["body"].split(","):
        prop = _PROPERTY.fullmatch(assignment)
        if prop is None or ALLOW_LISTED_PROPERTIES.get(prop["key"]) != prop["value"].lower():
            return False
    return True


@dataclass(frozen=True)
class Operation:
    """One job-spec operation.

    :param name: the job spec's ``operation``, e.g. ``merge``.
    :param verb: how reports and logs name it, e.g. ``MERGE``.
    :param operation_class: its class when its options change nothing (see :func:`operation_class`).
    :param kind: the conflict-checker kind it runs when its options change nothing (see :func:`op_kind`).
    :param kinds: every kind it can run as.
    :param needs_source: the job spec must name a source (the operations not marked read none).
    :param is_maintenance: table maintenance (gated by writer leases), not a write.
    :param reads_source: it may read a source (``sql`` may, through the ``source`` view).
    """

    name: str
    verb: str
    operation_class: OperationClass
    kind: OpKind
    kinds: tuple[OpKind, ...]
    needs_source: bool = False
    is_maintenance: bool = False
    reads_source: bool = False

    @property
    def is_write(self) -> bool:
        """A write (it takes a writer lease), not maintenance."""
        return not self.is_maintenance


_C, _K = OperationClass, OpKind

#: Every job-spec operation, in the order the docs list them.
OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            "append",
            "APPEND",
            _C.BLIND_APPEND,
            _K.BLIND_APPEND,
            (_K.BLIND_APPEND, _K.SCHEMA_CHANGE),
            needs_source=True,
            reads_source=True,
        ),
        Operation(
            "overwrite_partitions",
            "OVERWRITE_PARTITIONS",
            _C.READ_MODIFY_WRITE,
            _K.OVERWRITE,
            (_K.OVERWRITE,),
            needs_source=True,
            reads_source=True,
        ),
        Operation(
            "merge",
            "MERGE",
            _C.READ_MODIFY_WRITE,
            _K.MERGE,
            (_K.MERGE,),
            needs_source=True,
            reads_source=True,
        ),
        Operation("update", "UPDATE", _C.READ_MODIFY_WRITE, _K.UPDATE, (_K.UPDATE,)),
        Operation("delete", "DELETE", _C.READ_MODIFY_WRITE, _K.DELETE, (_K.DELETE,)),
        Operation(
            "optimize",
            "OPTIMIZE",
            _C.MAINTENANCE,
            _K.OPTIMIZE,
            (_K.OPTIMIZE, _K.OPTIMIZE_ZORDER),
            is_maintenance=True,
        ),
        Operation("vacuum", "VACUUM", _C.MAINTENANCE, _K.VACUUM, (_K.VACUUM,), is_maintenance=True),
        Operation(
            "sql",
            "SQL",
            _C.READ_MODIFY_WRITE,
            _K.MERGE,
            tuple(k for k in _K if k is not _K.VACUUM),
            reads_source=True,
        ),
    )
}

#: The conflict-checker kinds that are table maintenance rather than writes.
MAINTENANCE_KINDS: frozenset[OpKind] = frozenset(
    kind for op in OPERATIONS.values() if op.is_maintenance for kind in op.kinds
)

#: The Spark setting that lets MERGE add the source's new columns to the table: a schema change.
SCHEMA_AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"

#: What a ``sql`` statement runs, by its leading verb (first match wins).
STATEMENT_KINDS: tuple[tuple[re.Pattern[str], OpKind], ...] = (
    (re.compile(r"^\s*merge\b", re.IGNORECASE), OpKind.MERGE),
    (re.compile(r"^\s*update\b", re.IGNORECASE), OpKind.UPDATE),
    (re.compile(r"^\s*delete\b", re.IGNORECASE), OpKind.DELETE),
    (re.compile(r"^\s*insert\s+overwrite\b", re.IGNORECASE), OpKind.OVERWRITE),
    (re.compile(r"^\s*insert\b", re.IGNORECASE), OpKind.INSERT_SELECT),
    (re.compile(r"^\s*(optimize)\b.*\bzorder\b", re.IGNORECASE | re.DOTALL), OpKind.OPTIMIZE_ZORDER),
    (re.compile(r"^\s*optimize\b", re.IGNORECASE), OpKind.OPTIMIZE),
    # ALTER TABLE … CLUSTER BY: only domain metadata on a clustered table
    (re.compile(r"^\s*alter\s+table\b.*\bcluster\s+by\b", re.IGNORECASE | re.DOTALL), OpKind.CLUSTER_BY),
    (re.compile(r"^\s*(alter|create|replace)\b", re.IGNORECASE), OpKind.SCHEMA_CHANGE),
    (re.compile(r"^\s*vacuum\b", re.IGNORECASE), OpKind.VACUUM),
)

#: The kind a ``sql`` statement declared with these classes runs whatever its verb (maintenance: only
#: when the verb says nothing).
_CLASS_KINDS: dict[OperationClass, OpKind] = {
    OperationClass.BLIND_APPEND: OpKind.BLIND_APPEND,
    OperationClass.SCHEMA_CHANGING: OpKind.SCHEMA_CHANGE,
    OperationClass.MAINTENANCE: OpKind.OPTIMIZE,
}


def operation(name: str) -> Operation:
    """The registry entry of a job-spec operation.

    :param name: the job spec's ``operation``.
    :raises ValueError: naming the known operations.
    """
    found = OPERATIONS.get(name)
    if found is None:
        raise ValueError(f"operation={name!r} is unknown; use one of {', '.join(OPERATIONS)}")
    return found


def evolves_schema(name: str, options: Mapping[str, Any], spark_conf: Mapping[str, str]) -> bool:
    """Whether the operation may change the table's schema: an append with ``merge_schema``, or a MERGE
    while the session has :data:`SCHEMA_AUTO_MERGE_CONF` set.

    :param name: the job spec's ``operation``.
    :param options: its options.
    :param spark_conf: the Spark settings the job runs with.
    """
    if name == "append":
        return bool(options.get("merge_schema"))
    if name == "merge":
        return str(spark_conf.get(SCHEMA_AUTO_MERGE_CONF, "false")).strip().lower() == "true"
    return False


def _statement_class(options: Mapping[str, Any]) -> OperationClass:
    """A ``sql`` statement's declared class; an unknown one counts as read-modify-write (the job spec's
    parser rejects it before anything runs)."""
    declared = options.get("op_class") or OperationClass.READ_MODIFY_WRITE
    try:
        return OperationClass(declared)
    except ValueError:
        return OperationClass.READ_MODIFY_WRITE


def operation_class(
    name: str, options: Mapping[str, Any] | None = None, spark_conf: Mapping[str, str] | None = None
) -> OperationClass:
    """The class a job spec's operation runs as, for the retry decision: what the engine decides and what
    the operator tells Airflow's retry policy.

    A schema-evolving append or MERGE is ``SCHEMA_CHANGING`` (never retried over another schema change);
    ``sql`` is what its ``op_class`` option declares.

    :param name: the job spec's ``operation``.
    :param options: its options.
    :param spark_conf: the Spark settings the job runs with (a MERGE reads schema auto-merge from them).
    """
    opts, conf = options or {}, spark_conf or {}
    if name == "sql":
        return _statement_class(opts)
    if evolves_schema(name, opts, conf):
        return OperationClass.SCHEMA_CHANGING
    return operation(name).operation_class


def statement_kind(statement: str) -> OpKind | None:
    """The kind a SQL statement runs by its verb (``VACUUM`` included), or None when the verb says nothing.

    The verb is read past comments and a leading ``WITH`` clause, never inside a string literal (see
    :func:`statement_text`).

    :param statement: SQL text (its first statement is judged).
    """
    text = statement_text(statement)
    for pattern, kind in STATEMENT_KINDS:
        if pattern.search(text):
            return kind
    return None


def statement_text(statement: str, *, literals: bool = False) -> str:
    """The first statement of ``statement`` on one line, as :mod:`~.sql_text` reads it: comments and a
    leading ``WITH`` clause left out, string literals masked unless ``literals``. Text that cannot be read
    (an unterminated literal) is returned as written: Spark will say what is wrong with it.

    :param statement: SQL text.
    :param literals: keep string literals as written.
    """
    try:
        statements = split_statements(statement)
    except SqlTextError:
        return statement
    return code_text(main_statement(statements[0]), literals=literals) if statements else ""


def op_kind(name: str, options: Mapping[str, Any] | None = None) -> OpKind:
    """The conflict-checker kind a job spec's operation runs.

    ``append`` is a blind append (a schema change with ``merge_schema``); ``optimize`` with ``zorder_by`` is
    OPTIMIZE_ZORDER; ``sql`` goes by its ``op_class`` and, for read-modify-write statements, by the
    statement's verb (``INSERT`` reading the table is INSERT_SELECT; ``ALTER TABLE … CLUSTER BY`` is
    CLUSTER_BY unless declared a blind append or maintenance, and a statement that only enables a feature
    through an allow-listed table property is ENABLE_FEATURE); an unrecognised statement counts as MERGE, the
    kind that conflicts with the most. The others are their registry kind.

    :param name: the job spec's ``operation``.
    :param options: its options.
    """
    opts = options or {}
    if name == "append" and evolves_schema(name, opts, {}):
        return OpKind.SCHEMA_CHANGE
    if name == "optimize" and opts.get("zorder_by"):
        return OpKind.OPTIMIZE_ZORDER
    if name == "sql":
        declared = _statement_class(opts)
        by_verb = statement_kind(str(opts.get("statement") or ""))
        if by_verb is OpKind.CLUSTER_BY:
            if declared in (OperationClass.READ_MODIFY_WRITE, OperationClass.SCHEMA_CHANGING):
                return OpKind.CLUSTER_BY  # whatever op_class it is given, it is only that ALTER
            by_verb = OpKind.SCHEMA_CHANGE
        rewrites = declared in (OperationClass.READ_MODIFY_WRITE, OperationClass.SCHEMA_CHANGING)
        if rewrites and enables_allow_listed_feature(str(opts.get("statement") or "")):
            return OpKind.ENABLE_FEATURE
        if declared in _CLASS_KINDS and declared is not OperationClass.MAINTENANCE:
            return _CLASS_KINDS[declared]
        if by_verb in OPERATIONS["sql"].kinds:  # a SQL VACUUM takes part in no conflict: judged by its class
            return by_verb
        return _CLASS_KINDS.get(declared, OpKind.MERGE)
    return operation(name).kind
