"""Every cell of every conflict table in the seed pages (``/work/shared/seeds``), transcribed as data.

Each :class:`SeedCell` is one cell *as it applies to one profile and one condition*: a cell that says
"Cannot conflict in WriteSerializable. Can conflict in Serializable." becomes two entries, and a cell that
says "Cannot conflict in tables with deletion vectors enabled, unless ZORDER BY is used. Can conflict
otherwise." becomes one entry per condition. ``text`` keeps the cell verbatim; ``clause`` names the part
that applies. The seed tables are lower triangles: the upper cells are the same pairs (``can_conflict`` is
symmetric).

Seed terms -> :class:`OpKind` (``SEED_TERMS``):

- "INSERT" (000, 003), "INSERT (1)" (001, 004: appends that read nothing from the same table), "INSERT
  (append)" (002) -> ``BLIND_APPEND``. The footnote's "INSERT … containing subqueries that read from the same
  table" -> ``INSERT_SELECT``, which the matrix gives MERGE's row (tested separately, not a table cell).
- "UPDATE, DELETE, MERGE INTO" / "UPDATE / DELETE / MERGE INTO" / "UPDATE, DELETE, or MERGE" /
  "MERGE/UPDATE/DELETE" -> ``UPDATE``, ``DELETE``, ``MERGE`` (each pair of the product is checked).
- "COMPACTION" (000: "file compaction … with the option dataChange set to false") -> ``OPTIMIZE`` and
  ``OPTIMIZE_ZORDER`` (a Z-order rewrite is a dataChange=false compaction too in OSS).
- "OPTIMIZE" (003, 002: no ZORDER distinction) -> ``OPTIMIZE`` and ``OPTIMIZE_ZORDER``; (001, 004) "when
  ZORDER BY is used" -> ``OPTIMIZE_ZORDER`` (on either side), "otherwise" -> ``OPTIMIZE`` on both sides.
- "Can conflict …" -> ``can``; "Cannot conflict …" -> ``never``; Fabric "Yes, if …" -> ``can``, "No" ->
  ``never``. No seed cell says "will": the matrix only answers ``will`` for schema changes and for traits
  (``same_files``, ``identity_columns``) no seed cell sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_deltacc.conflict_matrix.profiles import EngineProfile, TableTraits
from airflow_provider_deltacc.conflict_matrix.table import Level
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind

_INS = (OpKind.BLIND_APPEND,)
_DML = (OpKind.UPDATE, OpKind.DELETE, OpKind.MERGE)
_OPT_ANY = (OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER)
_OPT = (OpKind.OPTIMIZE,)
_ZORDER = (OpKind.OPTIMIZE_ZORDER,)

#: How each seed term maps to operations (see the module docstring).
SEED_TERMS: dict[str, tuple[OpKind, ...]] = {
    "INSERT": _INS,
    "INSERT (1)": _INS,
    "INSERT (append)": _INS,
    "INSERT with a subquery reading the same table": (OpKind.INSERT_SELECT,),
    "UPDATE, DELETE, MERGE INTO": _DML,
    "UPDATE / DELETE / MERGE INTO": _DML,
    "UPDATE, DELETE, or MERGE": _DML,
    "MERGE/UPDATE/DELETE": _DML,
    "UPDATE/DELETE/MERGE": _DML,
    "COMPACTION": _OPT_ANY,
    "OPTIMIZE": _OPT_ANY,
    "OPTIMIZE (ZORDER BY used)": _ZORDER,
    "OPTIMIZE (no ZORDER BY)": _OPT,
}


@dataclass(frozen=True)
class SeedCell:
    """One seed table cell as it applies to one profile and condition.

    :param seed: the seed file.
    :param table: the table's heading in the seed.
    :param row: the row's seed term. :param col: the column's seed term.
    :param text: the cell, verbatim.
    :param clause: the part of ``text`` this entry checks ("" when the whole cell applies).
    :param profile: the profile the table describes.
    :param traits: the table traits the clause assumes.
    :param row_ops: the operations the row term means here. :param col_ops: the same for the column.
    :param expected: ``never`` or ``can``, mapped from the seed's words.
    :param exceptions: exceptions the seed page ties to this pair (must be among ``Verdict.exceptions``).
    """

    seed: str
    table: str
    row: str
    col: str
    text: str
    clause: str
    profile: EngineProfile
    traits: TableTraits
    row_ops: tuple[OpKind, ...]
    col_ops: tuple[OpKind, ...]
    expected: Level
    exceptions: tuple[ConflictKind, ...] = ()

    @property
    def id(self) -> str:
        """A pytest id: ``seed/table/row x col/profile[/clause]``."""
        seed = self.seed.split("_")[0]
        parts = [seed, self.table, f"{self.row} x {self.col}", self.profile.value]
        if self.clause:
            parts.append(self.clause)
        return "/".join(parts)


S000, S001, S002, S003, S004 = (
    "000_f931b8867871d1ce.txt",
    "001_153fb348c46451e9.txt",
    "002_d9242279a0264fdb.txt",
    "003_a849d32c051a7c9f.txt",
    "004_b2a198048c3bc969.txt",
)
WS, SER = EngineProfile.DATABRICKS_WRITE_SERIALIZABLE, EngineProfile.DATABRICKS_SERIALIZABLE
WS_RLC, SER_RLC = EngineProfile.DATABRICKS_WRITE_SERIALIZABLE_RLC, EngineProfile.DATABRICKS_SERIALIZABLE_RLC
OSS = EngineProfile.OSS_SERIALIZABLE
NEVER, CAN = Level.NEVER, Level.CAN
A, DR, DD = ConflictKind.APPEND, ConflictKind.DELETE_READ, ConflictKind.DELETE_DELETE

_PLAIN = TableTraits()
#: Row-level concurrency needs an unpartitioned table with deletion vectors.
_RLC_TABLE = TableTraits(deletion_vectors=True)
#: The "without row-level concurrency" tables: a partitioned table, with or without deletion vectors.
_NO_RLC = TableTraits(partitioned=True)
_NO_RLC_DV = TableTraits(partitioned=True, deletion_vectors=True)

# A cell spec: (row term, col term, verbatim text, [(clause, profile, traits, row ops, col ops, expected)]).
_Variant = tuple[str, EngineProfile, TableTraits, tuple[OpKind, ...], tuple[OpKind, ...], Level]
_Spec = tuple[str, str, str, list[_Variant], tuple[ConflictKind, ...]]


def _both(
    traits: TableTraits,
    rows: tuple[OpKind, ...],
    cols: tuple[OpKind, ...],
    level: Level,
    profiles: tuple[EngineProfile, EngineProfile],
) -> list[_Variant]:
    return [("", p, traits, rows, cols, level) for p in profiles]


def _expand(seed: str, table: str, specs: list[_Spec]) -> list[SeedCell]:
    return [
        SeedCell(seed, table, row, col, text, clause, profile, traits, rows, cols, level, exceptions)
        for row, col, text, variants, exceptions in specs
        for clause, profile, traits, rows, cols, level in variants
    ]


# --- 000 docs.delta.io: one table, OSS (Serializable only) ---------------------------------------------
_DUM = "UPDATE, DELETE, MERGE INTO"
_S000: list[_Spec] = [
    ("INSERT", "INSERT", "Cannot conflict", [("", OSS, _PLAIN, _INS, _INS, NEVER)], ()),
    # Exceptions: "The file additions can be caused by INSERT, DELETE, UPDATE, or MERGE operations."
    (_DUM, "INSERT", "Can conflict", [("", OSS, _PLAIN, _DML, _INS, CAN)], (A,)),
    # "often thrown during concurrent DELETE, UPDATE, or MERGE"; DeleteRead: "DELETE, UPDATE, or MERGE".
    (_DUM, _DUM, "Can conflict", [("", OSS, _PLAIN, _DML, _DML, CAN)], (A, DR)),
    ("COMPACTION", "INSERT", "Cannot conflict", [("", OSS, _PLAIN, _OPT_ANY, _INS, NEVER)], ()),
    ("COMPACTION", _DUM, "Can conflict", [("", OSS, _PLAIN, _OPT_ANY, _DML, CAN)], ()),
    # DeleteDelete: "could be caused by two concurrent compaction operations rewriting the same files".
    ("COMPACTION", "COMPACTION", "Can conflict", [("", OSS, _PLAIN, _OPT_ANY, _OPT_ANY, CAN)], (DD,)),
]


# --- 001 and 004 Databricks: with and without row-level concurrency -----------------------------------
def _rlc_table(dml_ins: str, dml_dml: str) -> list[_Spec]:
    zorder = "Can conflict when ZORDER BY is used. Cannot conflict otherwise."
    profiles = (WS_RLC, SER_RLC)
    return [
        ("INSERT", "INSERT (1)", "Cannot conflict", _both(_RLC_TABLE, _INS, _INS, NEVER, profiles), ()),
        (
            _DUM,
            "INSERT (1)",
            dml_ins,
            [
                ("Cannot conflict in WriteSerializable", WS_RLC, _RLC_TABLE, _DML, _INS, NEVER),
                (
                    "Can conflict in Serializable when modifying the same row",
                    SER_RLC,
                    _RLC_TABLE,
                    _DML,
                    _INS,
                    CAN,
                ),
            ],
            (),
        ),
        (_DUM, _DUM, dml_dml, _both(_RLC_TABLE, _DML, _DML, CAN, profiles), ()),
        ("OPTIMIZE", "INSERT (1)", "Cannot conflict", _both(_RLC_TABLE, _OPT_ANY, _INS, NEVER, profiles), ()),
        (
            "OPTIMIZE",
            _DUM,
            zorder,
            [
                *[("when ZORDER BY is used", p, _RLC_TABLE, _ZORDER, _DML, CAN) for p in profiles],
                *[("otherwise", p, _RLC_TABLE, _OPT, _DML, NEVER) for p in profiles],
            ],
            (),
        ),
        (
            "OPTIMIZE",
            "OPTIMIZE",
            zorder,
            [
                *[("when ZORDER BY is used", p, _RLC_TABLE, _ZORDER, _OPT_ANY, CAN) for p in profiles],
                *[("otherwise", p, _RLC_TABLE, _OPT, _OPT, NEVER) for p in profiles],
            ],
            (),
        ),
    ]


def _file_table(dml_ins: str, dml_dml: str, optimize: str) -> list[_Spec]:
    profiles = (WS, SER)

    def dv_cell(cols_any: tuple[OpKind, ...], cols_plain: tuple[OpKind, ...]) -> list[_Variant]:
        return [
            *[("deletion vectors, no ZORDER BY", p, _NO_RLC_DV, _OPT, cols_plain, NEVER) for p in profiles],
            *[("deletion vectors, ZORDER BY used", p, _NO_RLC_DV, _ZORDER, cols_any, CAN) for p in profiles],
            *[("otherwise (no deletion vectors)", p, _NO_RLC, _OPT_ANY, cols_any, CAN) for p in profiles],
        ]

    return [
        ("INSERT", "INSERT (1)", "Cannot conflict", _both(_NO_RLC, _INS, _INS, NEVER, profiles), ()),
        (
            _DUM,
            "INSERT (1)",
            dml_ins,
            [
                ("Cannot conflict in WriteSerializable", WS, _NO_RLC, _DML, _INS, NEVER),
                ("Can conflict in Serializable", SER, _NO_RLC, _DML, _INS, CAN),
            ],
            (),
        ),
        (_DUM, _DUM, dml_dml, _both(_NO_RLC, _DML, _DML, CAN, profiles), ()),
        ("OPTIMIZE", "INSERT (1)", "Cannot conflict", _both(_NO_RLC, _OPT_ANY, _INS, NEVER, profiles), ()),
        ("OPTIMIZE", _DUM, optimize, dv_cell(_DML, _DML), ()),
        ("OPTIMIZE", "OPTIMIZE", optimize, dv_cell(_OPT_ANY, _OPT), ()),
    ]


_S001_RLC = _rlc_table(
    "Cannot conflict in WriteSerializable. Can conflict in Serializable when modifying the same row.",
    "Can conflict when modifying the same row.",
)
_S001_FILE = _file_table(
    "Cannot conflict in WriteSerializable. Can conflict in Serializable. See Avoid conflicts using "
    "partitioning.",
    "Can conflict in Serializable and WriteSerializable. See Avoid conflicts using partitioning.",
    "Cannot conflict in tables with deletion vectors enabled, unless ZORDER BY is used. Can conflict "
    "otherwise.",
)
_S004_RLC = _rlc_table(
    "Cannot conflict in WriteSerializable. Can conflict in Serializable when modifying the same row. See "
    "Limitations for row-level concurrency.",
    "Can conflict when modifying the same row. See Limitations for row-level concurrency.",
)
_S004_FILE = _file_table(
    "Cannot conflict in WriteSerializable. Can conflict in Serializable. See avoid conflicts with "
    "partitions.",
    "Can conflict in Serializable and WriteSerializable. See avoid conflicts with partitions.",
    "Cannot conflict with in tables with deletion vectors enabled, unless ZORDER BY is used. Can conflict "
    "otherwise.",
)

# --- 003 Databricks (older): one table, WriteSerializable and Serializable, no deletion vectors --------
_BOTH = "Can conflict in Serializable & WriteSerializable"
_DUM3 = "UPDATE / DELETE / MERGE INTO"
_S003: list[_Spec] = [
    ("INSERT", "INSERT", "Cannot conflict", _both(_PLAIN, _INS, _INS, NEVER, (WS, SER)), ()),
    (
        _DUM3,
        "INSERT",
        "Can conflict in Serializable, cannot conflict in WriteSerializable",
        [
            ("Can conflict in Serializable", SER, _PLAIN, _DML, _INS, CAN),
            ("cannot conflict in WriteSerializable", WS, _PLAIN, _DML, _INS, NEVER),
        ],
        (),
    ),
    (_DUM3, _DUM3, _BOTH, _both(_PLAIN, _DML, _DML, CAN, (WS, SER)), ()),
    ("OPTIMIZE", "INSERT", "Cannot conflict", _both(_PLAIN, _OPT_ANY, _INS, NEVER, (WS, SER)), ()),
    ("OPTIMIZE", _DUM3, _BOTH, _both(_PLAIN, _OPT_ANY, _DML, CAN, (WS, SER)), ()),
    ("OPTIMIZE", "OPTIMIZE", _BOTH, _both(_PLAIN, _OPT_ANY, _OPT_ANY, CAN, (WS, SER)), ()),
]

# --- 002 Fabric: "Which operations conflict" (pair | Conflict? | Why); Fabric = OSS ---------------------
FABRIC = EngineProfile.FABRIC_SERIALIZABLE
_S002: list[_Spec] = [
    ("INSERT (append)", "INSERT (append)", "No", [("", FABRIC, _PLAIN, _INS, _INS, NEVER)], ()),
    ("INSERT (append)", "OPTIMIZE", "No", [("", FABRIC, _PLAIN, _INS, _OPT_ANY, NEVER)], ()),
    (
        "UPDATE, DELETE, or MERGE",
        "UPDATE, DELETE, or MERGE",
        "Yes, if they read or modify overlapping files",
        [("", FABRIC, _PLAIN, _DML, _DML, CAN)],
        (),
    ),
    # "a ConcurrentDeleteReadException is raised"
    (
        "OPTIMIZE",
        "UPDATE/DELETE/MERGE",
        "Yes, if they touch the same files",
        [("", FABRIC, _PLAIN, _OPT_ANY, _DML, CAN)],
        (DR,),
    ),
    # "triggering a ConcurrentDeleteDeleteException"
    (
        "OPTIMIZE",
        "OPTIMIZE",
        "Yes, if they select the same files",
        [("", FABRIC, _PLAIN, _OPT_ANY, _OPT_ANY, CAN)],
        (DD,),
    ),
    # The page's exception table: ConcurrentAppendException "even blind appends … can trigger this".
    (
        "INSERT (append)",
        "MERGE/UPDATE/DELETE",
        "Yes, if the data modification operation read the same partition",
        [("", FABRIC, _PLAIN, _INS, _DML, CAN)],
        (A,),
    ),
]

#: Every seed table cell, per profile and condition.
SEED_CELLS: list[SeedCell] = [
    *_expand(S000, "Write conflicts", _S000),
    *_expand(S001, "Conflict matrix with row-level concurrency", _S001_RLC),
    *_expand(S001, "Write conflicts without row-level concurrency", _S001_FILE),
    *_expand(S002, "Which operations conflict", _S002),
    *_expand(S003, "Write conflicts", _S003),
    *_expand(S004, "Write conflicts with row-level concurrency", _S004_RLC),
    *_expand(S004, "Write conflicts without row-level concurrency", _S004_FILE),
]
