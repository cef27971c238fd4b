"""The operations the conflict matrix knows, and what each one does to a table's transaction log.

An :class:`OpKind` is what a DAG author runs; its :class:`SeedRow` is the row/column of the seed conflict
tables it belongs to; its :class:`Footprint` is what the conflict checker sees of it (reference
``delta-concurrency.md`` §3.2 steps 6-8 and §3.4): whether it reads files, removes files, adds files
(blindly or not), changes metadata, and whether it commits at SnapshotIsolation.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind


class SeedRow(StrEnum):
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

    op_class: SeedRow
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
        SeedRow.DML, label, reads=True, removes=True, adds=Adds.CHANGED, inserts_rows=inserts_rows
    )


def _compaction(op_class: SeedRow, label: str) -> Footprint:
    return Footprint(op_class, label, reads=True, removes=True, adds=Adds.CHANGED, snapshot_isolation=True)


FOOTPRINTS: dict[OpKind, Footprint] = {
    OpKind.BLIND_APPEND: Footprint(SeedRow.APPEND, "blind append", adds=Adds.BLIND, inserts_rows=True),
    OpKind.INSERT_SELECT: Footprint(
        SeedRow.READ_INSERT,
        "INSERT … SELECT from the table",
        reads=True,
        adds=Adds.CHANGED,
        inserts_rows=True,
    ),
    OpKind.OVERWRITE: _dml("overwrite", inserts_rows=True),
    OpKind.UPDATE: _dml("UPDATE"),
    OpKind.DELETE: _dml("DELETE"),
    OpKind.MERGE: _dml("MERGE", inserts_rows=True),
    OpKind.OPTIMIZE: _compaction(SeedRow.COMPACT, "OPTIMIZE"),
    OpKind.OPTIMIZE_ZORDER: _compaction(SeedRow.ZORDER, "OPTIMIZE ZORDER BY"),
    OpKind.VACUUM: Footprint(SeedRow.VACUUM, "VACUUM", commits=False),
    OpKind.SCHEMA_CHANGE: Footprint(SeedRow.SCHEMA, "schema or table-property change", metadata=True),
    OpKind.CLUSTER_BY: Footprint(
        SeedRow.SCHEMA, "ALTER TABLE … CLUSTER BY", metadata=True, domain_metadata=True
    ),
    OpKind.ENABLE_FEATURE: Footprint(
        SeedRow.SCHEMA,
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
