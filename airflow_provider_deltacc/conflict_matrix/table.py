"""The conflict matrix itself: the seed conflict tables as rows of data.

``MATRIX`` has one :class:`Cell` per (effective profile, operation class, operation class in
:class:`SeedRow` order), built from ``_ROWS``, which transcribes the seed tables (000-004) and adds VACUUM and
schema changes from the reference. Traits are not in here: they apply as the named adjustments in
:mod:`.rules`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from airflow_provider_deltacc.conflict_matrix.ops import SeedRow
from airflow_provider_deltacc.conflict_matrix.profiles import EngineProfile


class Level(StrEnum):
    """How likely a pair is to conflict.

    - ``never``: no interleaving of the two makes either fail with a conflict exception.
    - ``can``: one (see ``Verdict.losers``) fails when the other commits first *and* they touch the same
      files, partitions or rows (what the seeds call "can conflict").
    - ``will``: no data dependence: whenever a loser is still in flight when the other commits, it fails
      (schema changes, two OPTIMIZEs over the same files). A "will" is a stronger "can".
    """

    NEVER = "never"
    CAN = "can"
    WILL = "will"


class Hazard(StrEnum):
    """A danger that is not an optimistic-concurrency conflict (no exception tells you about it)."""

    NONE = "none"
    #: VACUUM can delete a concurrent writer's written-but-uncommitted files (and files an old snapshot
    #: still reads) when its retention is shorter than that writer's run time.
    VACUUM_RETENTION = "vacuum_retention"


Granularity = Literal["file", "row", "table", "none"]


@dataclass(frozen=True)
class Cell:
    """One matrix cell before traits apply.

    :param level: the seed's answer.
    :param granularity: what must overlap for the conflict: files, rows, or nothing (``table``).
    :param mechanism: the reason template: ``{a}``/``{b}`` name the ops in canonical order, ``{exc}`` the
        exceptions, ``{fail}`` who fails.
    :param source: which seed rows / reference sections say so.
    :param hazard: a non-OCC danger.
    """

    level: Level
    granularity: Granularity
    mechanism: str
    source: str
    hazard: Hazard = Hazard.NONE


# ---------------------------------------------------------------------------------------------------------
# The table. Profiles are the *effective* ones (never an _RLC profile for an ineligible table).
P = EngineProfile
_ALL = frozenset(P)
_OSS = frozenset({P.OSS_SERIALIZABLE})
_DBX = frozenset(_ALL - _OSS)
_FILE = frozenset({P.OSS_SERIALIZABLE, P.DATABRICKS_SERIALIZABLE, P.DATABRICKS_WRITE_SERIALIZABLE})
_RLC = frozenset({P.DATABRICKS_SERIALIZABLE_RLC, P.DATABRICKS_WRITE_SERIALIZABLE_RLC})
_SER_FILE = frozenset({P.OSS_SERIALIZABLE, P.DATABRICKS_SERIALIZABLE})
_WS = frozenset({P.DATABRICKS_WRITE_SERIALIZABLE, P.DATABRICKS_WRITE_SERIALIZABLE_RLC})
_SER_RLC = frozenset({P.DATABRICKS_SERIALIZABLE_RLC})

C = SeedRow
_READERS = (C.READ_INSERT, C.DML)
_OPTIMIZES = (C.COMPACT, C.ZORDER)
_WRITERS = (C.APPEND, C.READ_INSERT, C.DML, C.COMPACT, C.ZORDER)
NEVER, CAN, WILL = Level.NEVER, Level.CAN, Level.WILL

_INS_INS = "000/001/003/004 INSERT x INSERT 'Cannot conflict'; 002 'Two INSERT (append) operations: No'"
_DML_INS = "000 UPDATE, DELETE, MERGE INTO x INSERT 'Can conflict'; 002 'INSERT + MERGE/UPDATE/DELETE'"
_DML_DML = (
    "000/003 UPDATE, DELETE, MERGE INTO x UPDATE, DELETE, MERGE INTO 'Can conflict'; 001/004 without RLC "
    "'Can conflict in Serializable and WriteSerializable'; 002 'Two UPDATE, DELETE, or MERGE operations'"
)
_OPT_INS = "000 COMPACTION x INSERT, 001/003/004 OPTIMIZE x INSERT 'Cannot conflict'; 002 'INSERT + OPTIMIZE'"
_OPT_DML = (
    "000 COMPACTION x UPDATE, DELETE, MERGE INTO 'Can conflict'; 003 'Can conflict in Serializable & "
    "WriteSerializable'; 001/004 without RLC 'Can conflict otherwise'; 002 'OPTIMIZE + UPDATE/DELETE/MERGE'"
)
_OPT_OPT = (
    "000 COMPACTION x COMPACTION 'Can conflict'; 003 OPTIMIZE x OPTIMIZE 'Can conflict in Serializable & "
    "WriteSerializable'; 001/004 without RLC 'Can conflict otherwise'; 002 'Two OPTIMIZE runs'"
)
_FOOT1 = "; 001/004 footnote (1): an INSERT reading the same table has the concurrency of MERGE"
_METADATA = (
    "004 'Metadata changes cause all concurrent write operations to fail'; 000/001/004 "
    "MetadataChangedException; reference §3.2-3.3"
)
_VACUUM = "reference §7.2; 002 'Schedule maintenance outside write windows'; ARCHITECTURE 'Maintenance'"

# Reasons: {a}/{b} name the two ops in canonical order, {exc} the exceptions, {fail} who fails.
_WHY_INS_INS = (
    "Two blind appends read nothing and only add new files, so the conflict checker has nothing to compare; "
    "Delta's built-in commit retry absorbs the race for the next version."
)
_WHY_INS_READ_SER = (
    "{b} reads every partition its condition names (the whole table without a literal partition pin, any "
    "file of an unpartitioned table), and under Serializable isolation files a concurrent {a} adds there "
    "make it fail with {exc}; the blind append itself cannot fail."
)
_WHY_INS_READ_SER_RLC = (
    "Under Serializable isolation a concurrent {a} can still fail {b} with {exc} when {b} reads the rows it "
    "appends; row-level concurrency resolves everything else."
)
_WHY_INS_READ_WS = (
    "Under WriteSerializable isolation the conflict checker ignores files added by blind appends, so {a} "
    "never fails {b}, and a blind append reads nothing, so {b} cannot fail it."
)
_WHY_READ_READ = (
    "{a} and {b} both read the table and write files, so {fail} with {exc} when the other added or removed "
    "files in partitions it read (any file at all without partition pins or on an unpartitioned table)."
)
_WHY_READ_READ_RLC = (
    "With row-level concurrency {a} and {b} only conflict when they modify the same rows (or use conditions "
    "row-level detection cannot resolve: complex types, non-deterministic expressions, subqueries); then "
    "{fail} with {exc}."
)
_WHY_INS_OPT = (
    "{b} commits only dataChange=false rewrites at SnapshotIsolation, which skips the concurrent-append "
    "check, and a blind append neither reads nor removes files, so neither can fail the other."
)
_WHY_READ_OPT = (
    "{b} removes and re-adds (dataChange=false) the files it compacts, so when {a} touches the same files "
    "{fail} with {exc}."
)
_WHY_READ_OPT_RLC = (
    "With row-level concurrency (deletion vectors) Databricks reconciles a plain {b} with concurrent row "
    "changes such as {a}, so neither fails; only ZORDER BY rewrites conflict."
)
_WHY_READ_ZORDER_RLC = (
    "{b} rewrites whole files, which row-level concurrency cannot reconcile, so when {a} touches the same "
    "files {fail} with {exc}."
)
_WHY_OPT_OPT = "{a} and {b} both remove and rewrite files; when they pick the same files {fail} with {exc}."
_WHY_OPT_OPT_RLC = (
    "Two plain OPTIMIZE runs on a table with row-level concurrency do not conflict on Databricks; only "
    "ZORDER BY rewrites do."
)
_WHY_ZORDER_RLC = (
    "ZORDER BY rewrites whole files, which Databricks cannot reconcile with another OPTIMIZE, so when {a} "
    "and {b} pick the same files {fail} with {exc}."
)
_WHY_VACUUM = (
    "VACUUM commits no file actions, so {a} never gets a conflict exception from it; but VACUUM deletes "
    "every unreferenced file older than the retention period, including files {a} has written and not yet "
    "committed, so a retention shorter than {a}'s run time breaks its commit (missing files)."
)
_WHY_VACUUM_VACUUM = (
    "Two VACUUM runs only delete files no snapshot within the retention period references and commit no "
    "file actions; deleting a file twice is harmless."
)
_WHY_VACUUM_SCHEMA = (
    "VACUUM commits no file actions, so a {b} never conflicts with it; but if the change is a "
    "schema-evolving write, VACUUM can delete its uncommitted files when the retention is shorter than its "
    "run time."
)
_WHY_SCHEMA = (
    "A {b} commits a Metadata action and Delta fails every writer still in flight against the old "
    "metadata, even a blind append, so {fail} with {exc} (Delta tolerates only identity high-water-mark "
    "and row-tracking updates, and from 4.1 the allow-listed feature enablements of ENABLE_FEATURE)."
)
_WHY_SCHEMA_OPT_OSS = (
    "{a}'s own commit retry re-commits after a concurrent {b} when all its files survive and the partition "
    "columns are unchanged, so only a change of partitioning or a dropped table feature makes it fail with "
    "{exc}."
)
_WHY_SCHEMA_OPT_DBX = (
    "On Databricks metadata changes fail all concurrent write operations, OPTIMIZE included: {fail} with "
    "{exc} when {b} commits first."
)
_WHY_SCHEMA_SCHEMA = (
    "Both commit Metadata actions, so {fail} with {exc} (ProtocolChangedException when both change the "
    "protocol or one drops a table feature)."
)

_SRC_INS_READ_SER = _DML_INS + "; 001/003/004 'Can conflict in Serializable'; reference §3.2 step 6" + _FOOT1
_SRC_INS_READ_SER_RLC = (
    "001/004 with RLC: 'Can conflict in Serializable when modifying the same row'" + _FOOT1
)
_SRC_INS_READ_WS = "001/003/004 'Cannot conflict in WriteSerializable'; reference §3.2 step 6" + _FOOT1
_SRC_READ_RLC = "001/004 with RLC: 'Can conflict when modifying the same row'" + _FOOT1
_SRC_OPT_RLC = "001/004 with RLC: OPTIMIZE x UPDATE, DELETE, MERGE INTO 'Cannot conflict otherwise'" + _FOOT1
_SRC_ZORDER_RLC = (
    "001/004 with RLC: OPTIMIZE x UPDATE, DELETE, MERGE INTO 'Can conflict when ZORDER BY is used'"
)
_SRC_OPT_OPT = _OPT_OPT + "; 000 ConcurrentDeleteDeleteException 'two concurrent compaction operations'"
_SRC_OPT_OPT_RLC = "001/004 with RLC: OPTIMIZE x OPTIMIZE 'Cannot conflict otherwise'"
_SRC_ZORDER_ZORDER_RLC = "001/004 with RLC: OPTIMIZE x OPTIMIZE 'Can conflict when ZORDER BY is used'"
_SRC_SCHEMA_OPT_OSS = "reference §7.1 (OPTIMIZE commitAndRetry), §3.3"

_VH = Hazard.VACUUM_RETENTION
_Row = tuple[frozenset[EngineProfile], tuple[SeedRow, ...], tuple[SeedRow, ...], Cell]

#: The seed tables (plus VACUUM and schema changes) as rows: profiles, classes, classes, cell.
_ROWS: tuple[_Row, ...] = (
    (_ALL, (C.APPEND,), (C.APPEND,), Cell(NEVER, "none", _WHY_INS_INS, _INS_INS + "; reference §3.4")),
    (_SER_FILE, (C.APPEND,), _READERS, Cell(CAN, "file", _WHY_INS_READ_SER, _SRC_INS_READ_SER)),
    (_SER_RLC, (C.APPEND,), _READERS, Cell(CAN, "row", _WHY_INS_READ_SER_RLC, _SRC_INS_READ_SER_RLC)),
    (_WS, (C.APPEND,), _READERS, Cell(NEVER, "none", _WHY_INS_READ_WS, _SRC_INS_READ_WS)),
    (_FILE, _READERS, _READERS, Cell(CAN, "file", _WHY_READ_READ, _DML_DML + "; reference §3.2" + _FOOT1)),
    (_RLC, _READERS, _READERS, Cell(CAN, "row", _WHY_READ_READ_RLC, _SRC_READ_RLC)),
    (_ALL, (C.APPEND,), _OPTIMIZES, Cell(NEVER, "none", _WHY_INS_OPT, _OPT_INS + "; reference §7.1")),
    (_FILE, _READERS, _OPTIMIZES, Cell(CAN, "file", _WHY_READ_OPT, _OPT_DML + "; reference §7.1" + _FOOT1)),
    (_RLC, _READERS, (C.COMPACT,), Cell(NEVER, "none", _WHY_READ_OPT_RLC, _SRC_OPT_RLC)),
    (_RLC, _READERS, (C.ZORDER,), Cell(CAN, "file", _WHY_READ_ZORDER_RLC, _SRC_ZORDER_RLC + _FOOT1)),
    (_FILE, _OPTIMIZES, _OPTIMIZES, Cell(CAN, "file", _WHY_OPT_OPT, _SRC_OPT_OPT)),
    (_RLC, (C.COMPACT,), (C.COMPACT,), Cell(NEVER, "none", _WHY_OPT_OPT_RLC, _SRC_OPT_OPT_RLC)),
    (_RLC, _OPTIMIZES, (C.ZORDER,), Cell(CAN, "file", _WHY_ZORDER_RLC, _SRC_ZORDER_ZORDER_RLC)),
    (_ALL, _WRITERS, (C.VACUUM,), Cell(NEVER, "none", _WHY_VACUUM, _VACUUM, _VH)),
    (_ALL, (C.VACUUM,), (C.VACUUM,), Cell(NEVER, "none", _WHY_VACUUM_VACUUM, _VACUUM)),
    (_ALL, (C.VACUUM,), (C.SCHEMA,), Cell(NEVER, "none", _WHY_VACUUM_SCHEMA, _VACUUM, _VH)),
    (_ALL, (C.APPEND, *_READERS), (C.SCHEMA,), Cell(WILL, "table", _WHY_SCHEMA, _METADATA)),
    (_OSS, _OPTIMIZES, (C.SCHEMA,), Cell(CAN, "table", _WHY_SCHEMA_OPT_OSS, _SRC_SCHEMA_OPT_OSS)),
    (_DBX, _OPTIMIZES, (C.SCHEMA,), Cell(WILL, "table", _WHY_SCHEMA_OPT_DBX, _METADATA)),
    (_ALL, (C.SCHEMA,), (C.SCHEMA,), Cell(WILL, "table", _WHY_SCHEMA_SCHEMA, _METADATA + "; §3.2 step 1")),
)


def _build() -> dict[tuple[EngineProfile, SeedRow, SeedRow], Cell]:
    order = list(SeedRow)
    table: dict[tuple[EngineProfile, SeedRow, SeedRow], Cell] = {}
    for profiles, firsts, seconds, cell in _ROWS:
        pairs = {tuple(sorted((x, y), key=order.index)) for x in firsts for y in seconds}
        for profile in profiles:
            for a, b in pairs:
                if (profile, a, b) in table:
                    raise ValueError(f"conflict matrix cell {(profile, a, b)} defined twice")
                table[(profile, a, b)] = cell
    return table


#: The whole matrix: (effective profile, class, class in SeedRow order) -> cell.
MATRIX: dict[tuple[EngineProfile, SeedRow, SeedRow], Cell] = _build()
