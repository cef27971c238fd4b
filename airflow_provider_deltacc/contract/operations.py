"""The one table of operations: what each job-spec operation is, for the spec, the engine and retries.

Standard library only: the engine, the Spark job, the operators and the advisor all import it (DAG parsing
too, so it stays cheap).

- :class:`OperationClass`: what an operation does, as far as retrying a conflict is concerned.
- :data:`OPERATIONS`: job-spec operation name -> :class:`Operation`.
- :func:`operation_class`: the class of one job spec, including the cases its options decide (a
  schema-evolving append or MERGE, a SQL statement's declared class).

What the conflict checker sees each operation run (:class:`~.op_kinds.OpKind`, for leases, the gate, the
conflict matrix and the advisor, none of which run in a Spark driver) is in :mod:`~.op_kinds`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class OperationClass(StrEnum):
    """What an operation does to a table, as far as retrying a conflict is concerned."""

    BLIND_APPEND = "blind_append"
    READ_MODIFY_WRITE = "read_modify_write"
    MAINTENANCE = "maintenance"
    SCHEMA_CHANGING = "schema_changing"


@dataclass(frozen=True)
class Operation:
    """One job-spec operation.

    :param name: the job spec's ``operation``, e.g. ``merge``.
    :param verb: how reports and logs name it, e.g. ``MERGE``.
    :param operation_class: its class when its options change nothing (see :func:`operation_class`).
    :param needs_source: the job spec must name a source (the operations not marked read none).
    :param is_maintenance: table maintenance (gated by writer leases), not a write.
    :param reads_source: it may read a source (``sql`` may, through the ``source`` view).
    """

    name: str
    verb: str
    operation_class: OperationClass
    needs_source: bool = False
    is_maintenance: bool = False
    reads_source: bool = False

    @property
    def is_write(self) -> bool:
        """A write (it takes a writer lease), not maintenance."""
        return not self.is_maintenance


#: Every job-spec operation, in the order the docs list them.
OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("append", "APPEND", OperationClass.BLIND_APPEND, needs_source=True, reads_source=True),
        Operation(
            "overwrite_partitions",
            "OVERWRITE_PARTITIONS",
            OperationClass.READ_MODIFY_WRITE,
            needs_source=True,
            reads_source=True,
        ),
        Operation("merge", "MERGE", OperationClass.READ_MODIFY_WRITE, needs_source=True, reads_source=True),
        Operation("update", "UPDATE", OperationClass.READ_MODIFY_WRITE),
        Operation("delete", "DELETE", OperationClass.READ_MODIFY_WRITE),
        Operation("optimize", "OPTIMIZE", OperationClass.MAINTENANCE, is_maintenance=True),
        Operation("vacuum", "VACUUM", OperationClass.MAINTENANCE, is_maintenance=True),
        Operation("sql", "SQL", OperationClass.READ_MODIFY_WRITE, reads_source=True),
    )
}

#: The Spark setting that lets MERGE add the source's new columns to the table: a schema change.
SCHEMA_AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"


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


def statement_class(options: Mapping[str, Any]) -> OperationClass:
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
        return statement_class(opts)
    if evolves_schema(name, opts, conf):
        return OperationClass.SCHEMA_CHANGING
    return operation(name).operation_class
