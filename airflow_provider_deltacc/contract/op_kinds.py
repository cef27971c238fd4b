"""What the conflict checker sees a job-spec operation run: its :class:`OpKind`, for the writers' leases, the
maintenance gate, the conflict matrix and the advisor (the Airflow worker's side; a Spark driver never needs
it, so it is not in the driver's bundle).

- :class:`OpKind`: the conflict matrix's rows and columns (their footprints live in
  :mod:`airflow_provider_deltacc.conflict_matrix.ops`).
- :data:`OPERATION_KINDS`: job-spec operation name -> the kind it runs when its options change nothing, and
  every kind it can run as.
- :func:`op_kind` and :func:`spec_op_kind`: the kind of one job spec, including the cases its options decide
  (a schema-evolving append, a Z-ordered OPTIMIZE, a SQL statement).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from airflow_provider_deltacc.contract.exceptions import SqlTextError
from airflow_provider_deltacc.contract.operations import (
    OPERATIONS,
    OperationClass,
    evolves_schema,
    operation,
    statement_class,
)
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.sql_text import Token, is_symbol, main_statement, split_statements


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


#: Every job-spec operation's kinds: the one it runs when its options change nothing (see :func:`op_kind`),
#: and every kind it can run as.
OPERATION_KINDS: dict[str, tuple[OpKind, tuple[OpKind, ...]]] = {
    "append": (OpKind.BLIND_APPEND, (OpKind.BLIND_APPEND, OpKind.SCHEMA_CHANGE)),
    "overwrite_partitions": (OpKind.OVERWRITE, (OpKind.OVERWRITE,)),
    "merge": (OpKind.MERGE, (OpKind.MERGE,)),
    "update": (OpKind.UPDATE, (OpKind.UPDATE,)),
    "delete": (OpKind.DELETE, (OpKind.DELETE,)),
    "optimize": (OpKind.OPTIMIZE, (OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER)),
    "vacuum": (OpKind.VACUUM, (OpKind.VACUUM,)),
    "sql": (OpKind.MERGE, tuple(kind for kind in OpKind if kind is not OpKind.VACUUM)),
}


def kinds_of(name: str) -> tuple[OpKind, ...]:
    """Every kind a job-spec operation can run as.

    :param name: the job spec's ``operation``.
    :raises ValueError: naming the known operations.
    """
    return OPERATION_KINDS[operation(name).name][1]


#: The conflict-checker kinds that are table maintenance rather than writes.
MAINTENANCE_KINDS: frozenset[OpKind] = frozenset(
    kind for op in OPERATIONS.values() if op.is_maintenance for kind in kinds_of(op.name)
)

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
        declared = statement_class(opts)
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
        if by_verb in kinds_of("sql"):  # a SQL VACUUM takes part in no conflict: judged by its class
            return by_verb
        return _CLASS_KINDS.get(declared, OpKind.MERGE)
    return OPERATION_KINDS[operation(name).name][0]


def spec_op_kind(spec: JobSpec) -> OpKind:
    """The conflict-checker kind of a job spec (:func:`op_kind` of its operation and options)."""
    return op_kind(spec.operation, dataclasses.asdict(spec.options))


def code_text(statement: list[Token], *, literals: bool = False) -> str:
    """The statement as one line: tokens joined by single spaces (none around a ``.``, so dotted names stay
    whole), comments gone, every string literal replaced by ``''`` unless ``literals`` (so a keyword inside a
    literal is never taken for one).

    :param statement: the tokens.
    :param literals: keep string literals as written.
    """
    parts: list[str] = []
    for index, token in enumerate(statement):
        if index and not is_symbol(token, ".") and not is_symbol(statement[index - 1], "."):
            parts.append(" ")
        parts.append(token.text if literals or token.kind != "string" else "''")
    return "".join(parts)
