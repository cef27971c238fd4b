"""The conflict matrix: every seed table cell, the trait adjustments, symmetry, VACUUM, reasons, Markdown."""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from pathlib import Path

import pytest

from airflow_provider_deltacc.conflict_matrix import (
    ADJUSTMENTS,
    EXCEPTION_NAMES,
    FOOTPRINTS,
    MATRIX,
    EngineProfile,
    Hazard,
    Level,
    SeedRow,
    TableTraits,
    can_conflict,
    matrix_markdown,
)
from airflow_provider_deltacc.conflict_matrix.ops import exposure
from airflow_provider_deltacc.conflict_matrix.rules import RLC_FALLBACK
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind
from tests.support.imports import imported_roots
from tests.support.matrix_seeds import SEED_CELLS, SEED_TERMS, SeedCell

pytestmark = pytest.mark.unit

OPS = list(OpKind)
PROFILES = list(EngineProfile)
# Data writers: not VACUUM, and not the table-wide changes (schema, clustering columns, features).
WRITERS = [
    op
    for op in OPS
    if op not in (OpKind.VACUUM, OpKind.SCHEMA_CHANGE, OpKind.CLUSTER_BY, OpKind.ENABLE_FEATURE)
]
DML = (OpKind.UPDATE, OpKind.DELETE, OpKind.MERGE)
OSS = EngineProfile.OSS_SERIALIZABLE
WS = EngineProfile.DATABRICKS_WRITE_SERIALIZABLE
SER = EngineProfile.DATABRICKS_SERIALIZABLE
WS_RLC = EngineProfile.DATABRICKS_WRITE_SERIALIZABLE_RLC
SER_RLC = EngineProfile.DATABRICKS_SERIALIZABLE_RLC
RLC_TABLE = TableTraits(deletion_vectors=True)

TRAITS = [
    TableTraits(),
    TableTraits(partitioned=True),
    TableTraits(partitioned=True, pinned=True),
    TableTraits(partitioned=True, pinned=True, deletion_vectors=True),
    TableTraits(deletion_vectors=True),
    TableTraits(partitioned=True, deletion_vectors=True),
    TableTraits(same_files=True),
    TableTraits(deletion_vectors=True, same_files=True),
    TableTraits(identity_columns=True),
    TableTraits(partitioned=True, pinned=True, identity_columns=True),
]


# --- the seed tables ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", SEED_CELLS, ids=[cell.id for cell in SEED_CELLS])
def test_seed_cell(cell: SeedCell) -> None:
    for row, col in itertools.product(cell.row_ops, cell.col_ops):
        for first, second in ((row, col), (col, row)):
            verdict = can_conflict(first, second, profile=cell.profile, traits=cell.traits)
            assert verdict.level is cell.expected, f"{first} x {second}: {verdict.reason}"
            missing = set(cell.exceptions) - set(verdict.exceptions)
            assert not missing, f"{first} x {second}: the seed names {missing}"


def test_every_seed_table_is_transcribed_whole() -> None:
    entries = Counter(cell.seed[:3] for cell in SEED_CELLS)
    assert entries == {"000": 6, "001": 36, "002": 6, "003": 12, "004": 36}
    tables: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for cell in SEED_CELLS:
        tables.setdefault((cell.seed, cell.table), set()).add((cell.row, cell.col))
    assert len(tables) == 7
    # Each seed table is a 3x3 lower triangle: six cells.
    assert all(len(cells) == 6 for cells in tables.values()), tables
    assert len({cell.id for cell in SEED_CELLS}) == len(SEED_CELLS)


def test_seed_terms_cover_every_term_used() -> None:
    for cell in SEED_CELLS:
        for term, ops in ((cell.row, cell.row_ops), (cell.col, cell.col_ops)):
            assert term in SEED_TERMS, term
            assert set(ops) <= set(SEED_TERMS[term]) | set(SEED_TERMS["OPTIMIZE"]), (term, ops)
        assert cell.expected in (Level.NEVER, Level.CAN), "no seed cell says 'will'"


def test_fabric_is_oss() -> None:
    assert EngineProfile.FABRIC_SERIALIZABLE is EngineProfile.OSS_SERIALIZABLE
    assert EngineProfile("oss_serializable") is EngineProfile.FABRIC_SERIALIZABLE
    fabric = [cell for cell in SEED_CELLS if cell.seed.startswith("002")]
    assert {cell.profile for cell in fabric} == {OSS}


def test_insert_reading_the_table_has_merge_concurrency() -> None:
    """001/004 footnote (1): INSERT with a subquery on the same table behaves like MERGE."""
    for profile, traits in itertools.product(PROFILES, TRAITS):
        for other in OPS:
            if other in (OpKind.INSERT_SELECT, OpKind.MERGE):
                continue
            as_insert = can_conflict(OpKind.INSERT_SELECT, other, profile=profile, traits=traits)
            as_merge = can_conflict(OpKind.MERGE, other, profile=profile, traits=traits)
            assert as_insert.level is as_merge.level, (profile, traits, other)


# --- structure and symmetry ----------------------------------------------------------------------------
def test_matrix_has_every_cell_once() -> None:
    classes = list(SeedRow)
    effective = set(PROFILES)
    pairs = list(itertools.combinations_with_replacement(classes, 2))
    assert set(MATRIX) == {(p, a, b) for p in effective for a, b in pairs}
    assert len(MATRIX) == len(effective) * len(pairs) == 5 * 28


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_symmetric(profile: EngineProfile) -> None:
    for traits in TRAITS:
        for a, b in itertools.product(OPS, OPS):
            assert can_conflict(a, b, profile=profile, traits=traits) == can_conflict(
                b, a, profile=profile, traits=traits
            ), (a, b, traits)


@pytest.mark.parametrize("profile", [OSS, WS, SER], ids=str)
def test_file_level_tables_agree_with_the_conflict_checker(profile: EngineProfile) -> None:
    """The seed tables (data) and the reference's checker applied to footprints give the same answer."""
    serializable, databricks = profile is not WS, profile is not OSS
    for a, b in itertools.product(OPS, OPS):
        derived = exposure(a, b, serializable=serializable, databricks=databricks) + exposure(
            b, a, serializable=serializable, databricks=databricks
        )
        assert can_conflict(a, b, profile=profile).conflicts is bool(derived), (a, b)


def test_accepts_strings() -> None:
    assert can_conflict("merge", "blind_append", profile="oss_serializable") == can_conflict(
        OpKind.MERGE, OpKind.BLIND_APPEND
    )
    with pytest.raises(ValueError):
        can_conflict("upsert", "merge")


# --- the headline cells ----------------------------------------------------------------------------------
def test_merge_vs_blind_append_depends_on_isolation() -> None:
    oss = can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND)
    assert oss.level is Level.CAN
    assert oss.exceptions == (ConflictKind.APPEND,)
    assert oss.losers == (OpKind.MERGE,)
    assert "ConcurrentAppendException" in oss.reason and "Serializable" in oss.reason
    assert can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, profile=WS).level is Level.NEVER
    assert can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, profile=SER).level is Level.CAN


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_optimize_never_conflicts_with_blind_append(profile: EngineProfile) -> None:
    for traits, optimize in itertools.product(TRAITS, (OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER)):
        verdict = can_conflict(optimize, OpKind.BLIND_APPEND, profile=profile, traits=traits)
        assert verdict.level is Level.NEVER, (traits, optimize)


def test_optimize_vs_dml_exceptions_on_oss() -> None:
    verdict = can_conflict(OpKind.OPTIMIZE, OpKind.MERGE)
    assert verdict.level is Level.CAN
    assert set(verdict.losers) == {OpKind.OPTIMIZE, OpKind.MERGE}
    assert set(verdict.exceptions) == {
        ConflictKind.APPEND,
        ConflictKind.DELETE_READ,
        ConflictKind.DELETE_DELETE,
    }
    reading_insert = can_conflict(OpKind.OPTIMIZE, OpKind.INSERT_SELECT)
    assert reading_insert.losers == (OpKind.INSERT_SELECT,), "INSERT removes nothing OPTIMIZE compacts"


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_schema_change_fails_every_writer(profile: EngineProfile) -> None:
    for op in WRITERS:
        verdict = can_conflict(OpKind.SCHEMA_CHANGE, op, profile=profile)
        assert ConflictKind.METADATA_CHANGED in verdict.exceptions
        assert verdict.losers == (op,)
        oss_optimize = profile is OSS and op in (OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER)
        assert verdict.level is (Level.CAN if oss_optimize else Level.WILL), (op, verdict.reason)
    both = can_conflict(OpKind.SCHEMA_CHANGE, OpKind.SCHEMA_CHANGE, profile=profile)
    assert both.level is Level.WILL
    assert ConflictKind.PROTOCOL_CHANGED in both.exceptions


# --- trait adjustments -------------------------------------------------------------------------------------
def test_adjustments_are_named_and_documented() -> None:
    names = [adjustment.name for adjustment in ADJUSTMENTS]
    assert names == [
        "allow_listed_metadata",
        "databricks_dv_optimize",
        "disjoint_partition_pins",
        "same_files_is_certain",
        "identity_columns",
        "cluster_by_is_domain_metadata",
        "clustered_dml_always_conflicts",
    ]
    assert all(adjustment.doc for adjustment in ADJUSTMENTS)


def test_traits_validate() -> None:
    with pytest.raises(ValueError, match="partitioned"):
        TableTraits(pinned=True)
    with pytest.raises(ValueError, match="same_files"):
        TableTraits(partitioned=True, pinned=True, same_files=True)
    assert TableTraits().describe() == "no traits"
    assert TableTraits(partitioned=True, pinned=True).describe() == "partitioned, pinned"


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_disjoint_partition_pins_remove_data_conflicts(profile: EngineProfile) -> None:
    pinned = TableTraits(partitioned=True, pinned=True)
    for a, b in itertools.product(WRITERS, WRITERS):
        verdict = can_conflict(a, b, profile=profile, traits=pinned)
        assert verdict.level is Level.NEVER, (a, b, verdict.reason)
        assert verdict.exceptions == () and verdict.losers == ()
        unpinned = can_conflict(a, b, profile=profile, traits=TableTraits(partitioned=True))
        if unpinned.conflicts:
            assert "disjoint_partition_pins" in verdict.rules
            assert "disjoint partitions" in verdict.reason
            assert EXCEPTION_NAMES[unpinned.exceptions[0]] in verdict.reason
    # Schema changes are table-wide and VACUUM is not partition-scoped: pins do not help.
    assert (
        can_conflict(OpKind.SCHEMA_CHANGE, OpKind.MERGE, profile=profile, traits=pinned).level is Level.WILL
    )
    vacuum = can_conflict(OpKind.VACUUM, OpKind.MERGE, profile=profile, traits=pinned)
    assert vacuum.hazard is Hazard.VACUUM_RETENTION


def test_pinned_merge_and_append_do_not_conflict_on_oss() -> None:
    pinned = TableTraits(partitioned=True, pinned=True)
    assert can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, traits=pinned).level is Level.NEVER
    assert can_conflict(OpKind.MERGE, OpKind.MERGE, traits=pinned).level is Level.NEVER
    assert can_conflict(OpKind.OPTIMIZE, OpKind.UPDATE, traits=pinned).level is Level.NEVER


def test_deletion_vectors_change_nothing_on_oss() -> None:
    for a, b in itertools.product(OPS, OPS):
        for partitioned in (False, True):
            plain = can_conflict(a, b, traits=TableTraits(partitioned=partitioned))
            with_dvs = can_conflict(a, b, traits=TableTraits(partitioned=partitioned, deletion_vectors=True))
            assert plain == with_dvs, (a, b)


@pytest.mark.parametrize("profile", [WS, SER], ids=str)
def test_databricks_deletion_vectors_free_plain_optimize(profile: EngineProfile) -> None:
    dvs = TableTraits(partitioned=True, deletion_vectors=True)
    for op in (*DML, OpKind.INSERT_SELECT, OpKind.OVERWRITE, OpKind.OPTIMIZE):
        verdict = can_conflict(OpKind.OPTIMIZE, op, profile=profile, traits=dvs)
        assert verdict.level is Level.NEVER and verdict.rules == ("databricks_dv_optimize",)
        assert can_conflict(OpKind.OPTIMIZE_ZORDER, op, profile=profile, traits=dvs).level is Level.CAN
        assert can_conflict(OpKind.OPTIMIZE, op, profile=profile, traits=TableTraits()).level is Level.CAN


@pytest.mark.parametrize(
    ("rlc", "without"), [(WS_RLC, WS), (SER_RLC, SER)], ids=["write_serializable", "serializable"]
)
def test_row_level_concurrency_needs_unpartitioned_table_with_dvs(
    rlc: EngineProfile, without: EngineProfile
) -> None:
    for traits in (TableTraits(partitioned=True, deletion_vectors=True), TableTraits()):
        for a, b in itertools.product(OPS, OPS):
            fallback = can_conflict(a, b, profile=rlc, traits=traits)
            direct = can_conflict(a, b, profile=without, traits=traits)
            assert fallback.profile is without and fallback.rules[0] == RLC_FALLBACK
            assert (fallback.level, fallback.exceptions, fallback.losers) == (
                direct.level,
                direct.exceptions,
                direct.losers,
            )
    eligible = can_conflict(OpKind.OPTIMIZE, OpKind.MERGE, profile=rlc, traits=RLC_TABLE)
    assert eligible.profile is rlc and eligible.rules == () and eligible.level is Level.NEVER


def test_same_files_makes_file_conflicts_certain() -> None:
    same = TableTraits(same_files=True)
    two_optimizes = can_conflict(OpKind.OPTIMIZE, OpKind.OPTIMIZE, traits=same)
    assert two_optimizes.level is Level.WILL
    assert ConflictKind.DELETE_DELETE in two_optimizes.exceptions
    assert "same_files_is_certain" in two_optimizes.rules
    assert can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, traits=same).level is Level.WILL
    # Never stays never; row-level conflicts need the same rows, not just the same files.
    assert can_conflict(OpKind.OPTIMIZE, OpKind.BLIND_APPEND, traits=same).level is Level.NEVER
    rlc_same = TableTraits(deletion_vectors=True, same_files=True)
    assert can_conflict(OpKind.MERGE, OpKind.UPDATE, profile=SER_RLC, traits=rlc_same).level is Level.CAN
    assert can_conflict(OpKind.OPTIMIZE_ZORDER, OpKind.UPDATE, profile=SER_RLC, traits=rlc_same).level is (
        Level.WILL
    )


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_identity_columns_make_inserting_writers_collide(profile: EngineProfile) -> None:
    identity = TableTraits(identity_columns=True)
    appends = can_conflict(OpKind.BLIND_APPEND, OpKind.BLIND_APPEND, profile=profile, traits=identity)
    assert appends.level is Level.WILL
    assert appends.exceptions == (ConflictKind.METADATA_CHANGED,)
    assert appends.losers == (OpKind.BLIND_APPEND,)
    merge = can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, profile=profile, traits=identity)
    assert merge.level is Level.WILL and set(merge.losers) == {OpKind.MERGE, OpKind.BLIND_APPEND}
    # Partition pins do not help: the high-water mark is table-wide; only the metadata conflict remains.
    pinned = TableTraits(partitioned=True, pinned=True, identity_columns=True)
    pinned_merge = can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, profile=profile, traits=pinned)
    assert pinned_merge.level is Level.WILL
    assert pinned_merge.exceptions == (ConflictKind.METADATA_CHANGED,)
    # UPDATE and DELETE insert no rows: the identity column does not involve them.
    plain = can_conflict(OpKind.UPDATE, OpKind.BLIND_APPEND, profile=profile)
    assert can_conflict(OpKind.UPDATE, OpKind.BLIND_APPEND, profile=profile, traits=identity) == plain


# --- VACUUM ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_vacuum_is_a_hazard_not_a_conflict(profile: EngineProfile) -> None:
    for traits in TRAITS:
        for op in (*WRITERS, OpKind.SCHEMA_CHANGE):
            verdict = can_conflict(OpKind.VACUUM, op, profile=profile, traits=traits)
            assert verdict.level is Level.NEVER and verdict.exceptions == () and verdict.losers == ()
            assert verdict.hazard is Hazard.VACUUM_RETENTION and verdict.unsafe
            assert "retention" in verdict.reason
        twice = can_conflict(OpKind.VACUUM, OpKind.VACUUM, profile=profile, traits=traits)
        assert twice.hazard is Hazard.NONE and not twice.unsafe
    for a, b in itertools.product(WRITERS, WRITERS):
        assert can_conflict(a, b, profile=profile).hazard is Hazard.NONE


# --- reasons -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_reasons_name_the_exceptions(profile: EngineProfile) -> None:
    for traits in TRAITS:
        for a, b in itertools.combinations_with_replacement(OPS, 2):
            verdict = can_conflict(a, b, profile=profile, traits=traits)
            assert verdict.reason and verdict.source, (a, b)
            assert "{" not in verdict.reason and "}" not in verdict.reason, verdict.reason
            assert verdict.reason[0].isupper() and verdict.reason.endswith("."), verdict.reason
            assert set(verdict.losers) <= {a, b}
            if verdict.conflicts:
                assert verdict.exceptions and verdict.losers, (a, b, traits)
                for kind in verdict.exceptions:
                    assert EXCEPTION_NAMES[kind] in verdict.reason, (a, b, kind, verdict.reason)
            else:
                assert verdict.exceptions == () and verdict.losers == ()


def test_every_op_has_a_footprint() -> None:
    assert set(FOOTPRINTS) == set(OpKind)
    assert not FOOTPRINTS[OpKind.VACUUM].commits
    assert (
        FOOTPRINTS[OpKind.OPTIMIZE].snapshot_isolation
        and FOOTPRINTS[OpKind.OPTIMIZE_ZORDER].snapshot_isolation
    )


# --- Markdown ----------------------------------------------------------------------------------------------
def test_markdown_renders_the_full_grid() -> None:
    text = matrix_markdown(OSS, TableTraits())
    lines = text.splitlines()
    assert lines[0].startswith("### Conflict matrix: OSS Delta / Fabric")
    header = next(line for line in lines if line.startswith("| |"))
    assert all(f"`{op.name}`" in header for op in OPS)
    grid = [line for line in lines if line.startswith("| `")]
    assert len(grid) == len(OPS)
    merge_row = next(line for line in grid if line.startswith("| `MERGE`"))
    cells = [cell.strip() for cell in merge_row.strip("|").split("|")][1:]
    assert cells[OPS.index(OpKind.BLIND_APPEND)] == "can"
    assert cells[OPS.index(OpKind.SCHEMA_CHANGE)] == "**will**"
    assert cells[OPS.index(OpKind.VACUUM)] == "never ⚠"
    bullets = [line for line in lines if line.startswith("- `")]
    assert len(bullets) == len(OPS) * (len(OPS) + 1) // 2
    assert any("ConcurrentAppendException" in line and "`MERGE`" in line for line in bullets)
    assert text.endswith("\n")


def test_markdown_follows_profile_and_traits() -> None:
    ws = matrix_markdown("databricks_write_serializable")
    merge_row = next(line for line in ws.splitlines() if line.startswith("| `MERGE`"))
    assert merge_row.split("|")[2].strip() == "never"
    fallback = matrix_markdown(WS_RLC, TableTraits(partitioned=True, deletion_vectors=True))
    assert "Row-level concurrency needs an unpartitioned table" in fallback
    pinned = matrix_markdown(OSS, TableTraits(partitioned=True, pinned=True))
    assert "(partitioned, pinned)" in pinned.splitlines()[0]
    assert matrix_markdown() == matrix_markdown(OSS, TableTraits())


# --- imports -----------------------------------------------------------------------------------------------
MATRIX_DIR = Path(can_conflict.__code__.co_filename).parent


@pytest.mark.parametrize("path", sorted(MATRIX_DIR.glob("*.py")), ids=lambda p: p.name)
def test_matrix_imports_only_stdlib(path: Path) -> None:
    for _, roots in imported_roots(path):
        for root in roots - {"airflow_provider_deltacc", "__future__"}:
            assert root in sys.stdlib_module_names, f"{path.name}: {root}"


# --- per-side pins and allow-listed metadata (Delta's conflict checker) -----------------------------------
PARTITIONED = TableTraits(partitioned=True)


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_a_pinned_side_cannot_lose_whatever_the_other_pins(profile: EngineProfile) -> None:
    for a, b in itertools.product(WRITERS, WRITERS):
        one = can_conflict(a, b, profile=profile, traits=PARTITIONED, pinned_a=True, pinned_b=False)
        unpinned = can_conflict(a, b, profile=profile, traits=PARTITIONED)
        assert one == can_conflict(b, a, profile=profile, traits=PARTITIONED, pinned_a=False, pinned_b=True)
        if a != b:
            assert a not in one.losers, (a, b, one.reason)
        assert len(one.losers) <= 1, (a, b)
        assert set(one.losers) <= set(unpinned.losers)
        assert one.level in (unpinned.level, Level.NEVER), (a, b)
        if not one.conflicts and unpinned.conflicts:
            assert "disjoint_partition_pins" in one.rules and "pinned or not" in one.reason
    both = TableTraits(partitioned=True, pinned=True)
    for a, b in itertools.product(WRITERS, WRITERS):
        assert can_conflict(a, b, profile=profile, traits=PARTITIONED, pinned_a=True, pinned_b=True) == (
            can_conflict(a, b, profile=profile, traits=both)
        )


def test_pinned_merge_survives_an_unpinned_winner_that_wrote_elsewhere() -> None:
    """The headline cells: the winner's pinning is irrelevant, only the loser's reads count."""
    append = can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, traits=PARTITIONED, pinned_a=True)
    assert append.level is Level.NEVER and append.losers == ()
    update = can_conflict(OpKind.MERGE, OpKind.UPDATE, traits=PARTITIONED, pinned_a=True)
    assert update.level is Level.CAN and update.losers == (OpKind.UPDATE,)
    assert "only the UPDATE can fail" in update.reason
    same_kind = can_conflict(OpKind.MERGE, OpKind.MERGE, traits=PARTITIONED, pinned_a=True)
    assert same_kind.losers == (OpKind.MERGE,) and "only the unpinned MERGE can fail" in same_kind.reason
    with pytest.raises(ValueError, match="partitioned"):
        can_conflict(OpKind.MERGE, OpKind.BLIND_APPEND, pinned_a=True)
    with pytest.raises(ValueError, match="same_files"):
        can_conflict(
            OpKind.MERGE,
            OpKind.UPDATE,
            traits=TableTraits(partitioned=True, same_files=True),
            pinned_b=True,
        )


def test_allow_listed_feature_enablement_fails_no_writer_on_oss() -> None:
    for op in WRITERS:
        verdict = can_conflict(OpKind.ENABLE_FEATURE, op)
        assert verdict.level is Level.NEVER and verdict.rules == ("allow_listed_metadata",), op
        assert can_conflict(OpKind.SCHEMA_CHANGE, op).conflicts
    for metadata in (OpKind.SCHEMA_CHANGE, OpKind.ENABLE_FEATURE):
        both = can_conflict(OpKind.ENABLE_FEATURE, metadata)
        assert both.level is Level.WILL and ConflictKind.METADATA_CHANGED in both.exceptions
    assert can_conflict(OpKind.ENABLE_FEATURE, OpKind.VACUUM).hazard is Hazard.VACUUM_RETENTION


@pytest.mark.parametrize("profile", [WS, SER, WS_RLC, SER_RLC], ids=str)
def test_databricks_keeps_metadata_changes_failing_all(profile: EngineProfile) -> None:
    for op in WRITERS:
        feature = can_conflict(OpKind.ENABLE_FEATURE, op, profile=profile)
        schema = can_conflict(OpKind.SCHEMA_CHANGE, op, profile=profile)
        assert (feature.level, feature.losers, feature.exceptions) == (
            schema.level,
            schema.losers,
            schema.exceptions,
        )


def test_identity_columns_make_feature_enablement_collide_with_inserts() -> None:
    identity = TableTraits(identity_columns=True)
    verdict = can_conflict(OpKind.ENABLE_FEATURE, OpKind.BLIND_APPEND, traits=identity)
    assert verdict.level is Level.WILL and verdict.exceptions == (ConflictKind.METADATA_CHANGED,)
    assert set(verdict.losers) == {OpKind.ENABLE_FEATURE, OpKind.BLIND_APPEND}
    assert can_conflict(OpKind.ENABLE_FEATURE, OpKind.UPDATE, traits=identity).level is Level.NEVER


def test_markdown_with_one_side_pinned_lists_what_the_pin_changes() -> None:
    text = matrix_markdown(OSS, PARTITIONED, row_pinned=True)
    assert "(partitioned, row pinned, column not)" in text.splitlines()[0]
    merge_row = next(line for line in text.splitlines() if line.startswith("| `MERGE`"))
    cells = [cell.strip() for cell in merge_row.strip("|").split("|")][1:]
    assert cells[OPS.index(OpKind.BLIND_APPEND)] == "never"
    assert cells[OPS.index(OpKind.UPDATE)] == "can"
    bullets = [line for line in text.splitlines() if line.startswith("- `")]
    assert any(line.startswith("- `MERGE` x `BLIND_APPEND` (**never**)") for line in bullets)
    assert not any(line.startswith("- `BLIND_APPEND` x") for line in bullets), "nothing changes for it"


def test_op_kind_has_one_import_path() -> None:
    """``OpKind`` is imported from the operations' conflict-checker kinds, its one home; the matrix does not
    pass it on."""
    import airflow_provider_deltacc.conflict_matrix as matrix

    assert "OpKind" not in matrix.__all__
    assert not hasattr(matrix, "OpKind")
    assert OpKind.__module__ == "airflow_provider_deltacc.contract.op_kinds"
