"""The operations the conflict matrix knows, and what each one does to a table's transaction log.

An :class:`OpKind` is what a DAG author runs; its :class:`OpClass` is the row/column of the seed conflict
tables it belongs to; its :class:`Footprint` is what the conflict checker sees of it (reference
``delta-concurrency.md`` §3.2 steps 6-8 and §3.4): whether it reads files, removes files, adds files
(blindly or not), changes metadata, and whether it commits at SnapshotIsolation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from airflow_provider_deltacc.occ.kinds import ConflictKind


class OpKind(StrEnum):
    """A write operation on a Delta table, as the conflict matrix distinguishes them.

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
    - ``VACUUM``: deletes unreferenced files; takes no part in optimistic concurrency (see ``Hazard``).
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
      ``clustered`` adjustment in :mod:`.clustered`).
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
    match = _SET_PROPERTIES.match(statement)
    if match is None:
        return False
    for assignment in match["body"].split(","):
        prop = _PROPERTY.fullmatch(assignment)
        if prop is None or ALLOW_LISTED_PROPERTIES.get(prop["key"]) != prop["value"].lower():
            return False
    return True


class OpClass(StrEnum):
    """The row/column of the seed conflict tables an operation falls under."""

    APPEND = "append"  # seeds: INSERT
    READ_INSERT = "read_insert"  # seeds' footnote (1): INSERT reading the same table = like MERGE
    DML = "dml"  # seeds: UPDATE, DELETE, MERGE INTO (+ overwrite, reference §3.4)
    COMPACT = "compact"  # seeds: COMPACTION / OPTIMIZE without ZORDER BY
    ZORDER = "zorder"  # seeds: OPTIMIZE "when ZORDER BY is used"
    VACUUM = "vacuum"
    SCHEMA = "schema"


class Adds(StrEnum):
    """What kind of AddFiles an operation commits, as the concurrent-append check sees them."""

    NONE = "none"
    BLIND = "blind"  # ignored by a WriteSerializable reader, seen by a Serializable one
    CHANGED = "changed"  # seen at both levels (DML output, and OPTIMIZE's dataChange=false rewrites)


@dataclass(frozen=True)
class Footprint:
    """What the conflict checker sees of one operation.

    :param op_class: the seed-table row/column.
    :param label: how reasons name it.
    :param reads: it tracks read files/predicates, so concurrent adds and removes can fail it.
    :param removes: it commits RemoveFiles.
    :param adds: what its AddFiles are.
    :param snapshot_isolation: it commits only ``dataChange=false`` file actions, which Delta downgrades to
        SnapshotIsolation: the concurrent-append check is skipped for it (reference §3.1, §7.1).
    :param metadata: it commits a Metadata/Protocol action.
    :param allow_listed: its metadata change is one OSS Delta 4.1+ resolves for a concurrent writer that
        changes no metadata itself (:data:`ALLOW_LISTED_PROPERTIES`), instead of failing it.
    :param inserts_rows: it can insert new rows (generate identity values).
    :param commits: it takes part in optimistic concurrency at all (VACUUM does not).
    :param domain_metadata: it commits a (non row-tracking) domain metadata action; two such commits of one
        domain fail the second with ConcurrentTransactionException (Delta's ConflictChecker,
        ``checkIfDomainMetadataConflict``).
    """

    op_class: OpClass
    label: str
    reads: bool = False
    removes: bool = False
    adds: Adds = Adds.NONE
    snapshot_isolation: bool = False
    metadata: bool = False
    allow_listed: bool = False
    inserts_rows: bool = False
    commits: bool = True
    domain_metadata: bool = False


def _dml(label: str, *, inserts_rows: bool = False) -> Footprint:
    return Footprint(
        OpClass.DML, label, reads=True, removes=True, adds=Adds.CHANGED, inserts_rows=inserts_rows
    )


def _compaction(op_class: OpClass, label: str) -> Footprint:
    return Footprint(op_class, label, reads=True, removes=True, adds=Adds.CHANGED, snapshot_isolation=True)


FOOTPRINTS: dict[OpKind, Footprint] = {
    OpKind.BLIND_APPEND: Footprint(OpClass.APPEND, "blind append", adds=Adds.BLIND, inserts_rows=True),
    OpKind.INSERT_SELECT: Footprint(
        OpClass.READ_INSERT,
        "INSERT … SELECT from the table",
        reads=True,
        adds=Adds.CHANGED,
        inserts_rows=True,
    ),
    OpKind.OVERWRITE: _dml("overwrite", inserts_rows=True),
    OpKind.UPDATE: _dml("UPDATE"),
    OpKind.DELETE: _dml("DELETE"),
    OpKind.MERGE: _dml("MERGE", inserts_rows=True),
    OpKind.OPTIMIZE: _compaction(OpClass.COMPACT, "OPTIMIZE"),
    OpKind.OPTIMIZE_ZORDER: _compaction(OpClass.ZORDER, "OPTIMIZE ZORDER BY"),
    OpKind.VACUUM: Footprint(OpClass.VACUUM, "VACUUM", commits=False),
    OpKind.SCHEMA_CHANGE: Footprint(OpClass.SCHEMA, "schema or table-property change", metadata=True),
    OpKind.CLUSTER_BY: Footprint(
        OpClass.SCHEMA, "ALTER TABLE … CLUSTER BY", metadata=True, domain_metadata=True
    ),
    OpKind.ENABLE_FEATURE: Footprint(
        OpClass.SCHEMA,
        "feature enablement through an allow-listed property",
        metadata=True,
        allow_listed=True,
    ),
}

#: Delta's exception class for each conflict kind, as reasons name them.
EXCEPTION_NAMES: dict[ConflictKind, str] = {
    ConflictKind.APPEND: "ConcurrentAppendException",
    ConflictKind.DELETE_READ: "ConcurrentDeleteReadException",
    ConflictKind.DELETE_DELETE: "ConcurrentDeleteDeleteException",
    ConflictKind.METADATA_CHANGED: "MetadataChangedException",
    ConflictKind.PROTOCOL_CHANGED: "ProtocolChangedException",
    ConflictKind.CONCURRENT_TRANSACTION: "ConcurrentTransactionException",
    ConflictKind.CONCURRENT_WRITE: "ConcurrentWriteException",
    ConflictKind.MAX_COMMIT_ATTEMPTS: "DELTA_MAX_COMMIT_RETRIES_EXCEEDED",
}


def exposure(
    loser: OpKind, winner: OpKind, *, serializable: bool, databricks: bool = False
) -> tuple[ConflictKind, ...]:
    """The exceptions ``loser`` can raise when ``winner`` commits while it is in flight, file-level.

    This is Delta's conflict checker (reference §3.2) applied to two footprints: only the loser's reads and
    removes are compared with the winner's metadata (step 2), added files (the isolation-dependent
    concurrent-append check, step 6) and removed files (deleted-read, step 7; delete-delete, step 8). The
    winner's own reads play no part. It says which exceptions are *possible*; whether the files actually
    overlap is the matrix's business (and the loser's partition pins, see ``can_conflict``).

    :param loser: the transaction still in flight.
    :param winner: the transaction that commits first.
    :param serializable: the loser commits at Serializable (blind appends count), not WriteSerializable.
    :param databricks: Databricks Runtime semantics: every metadata change fails concurrent writers (its
        documented tables), where OSS Delta 4.1+ resolves allow-listed feature enablements.
    """
    lose, win = FOOTPRINTS[loser], FOOTPRINTS[winner]
    if not (lose.commits and win.commits):
        return ()
    kinds: list[ConflictKind] = []
    if win.metadata and not (win.allow_listed and not lose.metadata and not databricks):
        kinds += [ConflictKind.METADATA_CHANGED, ConflictKind.PROTOCOL_CHANGED]
    seen = win.adds is Adds.CHANGED or (win.adds is Adds.BLIND and serializable)
    if lose.reads and not lose.snapshot_isolation and seen:
        kinds.append(ConflictKind.APPEND)
    if lose.reads and win.removes:
        kinds.append(ConflictKind.DELETE_READ)
    if lose.removes and win.removes:
        kinds.append(ConflictKind.DELETE_DELETE)
    if lose.domain_metadata and win.domain_metadata:
        kinds.append(ConflictKind.CONCURRENT_TRANSACTION)
    return tuple(kinds)
