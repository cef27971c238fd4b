"""The named trait adjustments and :func:`can_conflict`.

:func:`can_conflict` looks the pair up in :data:`.table.MATRIX` (for the effective profile), applies the
``ADJUSTMENTS`` in order, and derives which exceptions each side can see and who can lose from the
footprints in :mod:`.ops` (Delta's conflict checker, reference §3.2): a side can lose only through what *it*
reads or removes, so a side pinned to partitions the other does not write cannot lose, whatever the other's
own pinning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from airflow_provider_deltacc.conflict_matrix.clustered import CLUSTERING_ADJUSTMENTS
from airflow_provider_deltacc.conflict_matrix.ops import (
    EXCEPTION_NAMES,
    FOOTPRINTS,
    SeedRow,
    exposure,
)
from airflow_provider_deltacc.conflict_matrix.profiles import (
    PROFILE_SPECS,
    EngineProfile,
    TableTraits,
    effective_profile,
)
from airflow_provider_deltacc.conflict_matrix.table import MATRIX, Granularity, Hazard, Level
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind

C = SeedRow
NEVER, CAN, WILL = Level.NEVER, Level.CAN, Level.WILL


@dataclass(frozen=True)
class Verdict:
    """The answer to "can these two, running concurrently, make either one fail?".

    :param level: ``never``, ``can`` or ``will`` (see :class:`Level`).
    :param exceptions: the conflict kinds the loser can see (empty for ``never``).
    :param reason: one sentence for a DAG author, naming the mechanism and the exceptions.
    :param source: the seed rows / reference sections behind it.
    :param losers: which of the two operations can be the one that fails (both when either can).
    :param hazard: a danger outside optimistic concurrency (VACUUM), reported even when ``level`` is never.
    :param profile: the profile whose table answered (an ``_RLC`` profile falls back for partitioned or
        DV-less tables).
    :param rules: the named adjustments that changed the seed cell, in order.
    """

    level: Level
    exceptions: tuple[ConflictKind, ...]
    reason: str
    source: str
    losers: tuple[OpKind, ...] = ()
    hazard: Hazard = Hazard.NONE
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE
    rules: tuple[str, ...] = ()

    @property
    def conflicts(self) -> bool:
        """True when either operation can fail with a conflict exception."""
        return self.level is not Level.NEVER

    @property
    def unsafe(self) -> bool:
        """True when the pair must not overlap: it conflicts, or it carries a hazard."""
        return self.conflicts or self.hazard is not Hazard.NONE


# ---------------------------------------------------------------------------------------------------------
# Trait adjustments.
@dataclass(frozen=True)
class _Pair:
    a: OpKind
    b: OpKind
    profile: EngineProfile
    traits: TableTraits
    pinned: tuple[bool, bool] = (False, False)  # a, b: reads only partitions the other does not write

    @property
    def classes(self) -> frozenset[SeedRow]:
        return frozenset({FOOTPRINTS[self.a].op_class, FOOTPRINTS[self.b].op_class})


@dataclass(frozen=True)
class _Draft:
    level: Level
    granularity: Granularity
    mechanism: str
    source: str
    hazard: Hazard
    extra: tuple[str, ...] = ()  # sentences appended to the reason
    force_exceptions: tuple[ConflictKind, ...] = ()
    all_lose: bool = False
    data_conflict: bool = True  # False when only a table-wide rule (identity) makes them conflict
    safe: tuple[bool, bool] = (False, False)  # a, b: pinned away from the other's files, cannot lose


@dataclass(frozen=True)
class Adjustment:
    """A named rule that changes a seed cell for some traits.

    :param name: recorded in ``Verdict.rules``.
    :param doc: what it does and why.
    :param apply: returns the changed draft, or None when it does not apply.
    """

    name: str
    doc: str
    apply: Callable[[_Pair, _Draft], _Draft | None]


def _databricks_dv_optimize(pair: _Pair, draft: _Draft) -> _Draft | None:
    spec = PROFILE_SPECS[pair.profile]
    others = pair.classes - {C.COMPACT}
    if not (spec.databricks and not spec.row_level and pair.traits.deletion_vectors):
        return None
    if C.COMPACT not in pair.classes or not others <= {C.READ_INSERT, C.DML} or draft.level is NEVER:
        return None
    return replace(
        draft,
        level=NEVER,
        granularity="none",
        mechanism=(
            "On Databricks, with deletion vectors enabled a plain OPTIMIZE (no ZORDER BY) does not conflict "
            "with concurrent writers, so neither {a} nor {b} fails."
        ),
        source="001/004 without RLC: 'Cannot conflict in tables with deletion vectors enabled, unless "
        "ZORDER BY is used'",
    )


def _allow_listed_metadata(pair: _Pair, draft: _Draft) -> _Draft | None:
    if PROFILE_SPECS[pair.profile].databricks:
        return None
    first, second = FOOTPRINTS[pair.a], FOOTPRINTS[pair.b]
    if second.allow_listed:
        feature, other = second, first
    elif first.allow_listed:
        feature, other = first, second
    else:
        return None
    if other.metadata or not other.commits:
        return None
    if pair.traits.identity_columns and other.inserts_rows:
        # The other's identity high-water mark is a metadata change too, which Delta never reconciles with
        # another metadata change: whichever commits second fails.
        return replace(
            draft,
            mechanism=(
                f"The table has an identity column: the {other.label} updates its high-water mark in the "
                f"metadata, and Delta never reconciles two metadata changes, so even a {feature.label} "
                "fails it, and {fail} with MetadataChangedException."
            ),
            force_exceptions=(ConflictKind.METADATA_CHANGED,),
            all_lose=True,
            data_conflict=False,
        )
    return replace(
        draft,
        level=NEVER,
        granularity="none",
        mechanism=(
            f"OSS Delta 4.1+ resolves a concurrent {feature.label} (such as delta.enableDeletionVectors = "
            f"true): a {other.label}, which changes no metadata itself, commits past it, and the feature "
            "enablement reads no files, so neither fails "
            "(Delta <= 4.0 and Databricks fail the writer with MetadataChangedException)."
        ),
        source="delta-io/delta ConflictChecker.attemptToResolveMetadataConflicts and "
        "metadataConfigurationChangeAllowList (4.1+); real two-writer runs on delta-spark 4.4 "
        "(tests/integration/conflict_matrix)",
    )


_PIN_SOURCE = (
    "; 000/001/004 'Avoid conflicts using partitioning and disjoint command conditions'; 002 'Isolate "
    "writers with partitioning'; Delta ConflictChecker: only the loser's read predicates and read files are "
    "checked against the winner's added and removed files"
)


def _disjoint_partition_pins(pair: _Pair, draft: _Draft) -> _Draft | None:
    if not any(pair.pinned) or draft.granularity not in ("file", "row") or draft.level is NEVER:
        return None
    source = draft.source + _PIN_SOURCE
    if all(pair.pinned):
        return replace(
            draft,
            level=NEVER,
            granularity="none",
            mechanism=(
                "Both carry literal predicates on disjoint partitions, so {a} and {b} read and write "
                "disjoint files and the conflict checker finds no overlap (unpinned they could fail with "
                "{unpinned})."
            ),
            source=source,
            safe=(True, True),
        )
    spec = PROFILE_SPECS[pair.profile]
    pinned, other = (pair.a, pair.b) if pair.pinned[0] else (pair.b, pair.a)
    if not exposure(pinned, other, serializable=spec.serializable, databricks=spec.databricks):
        return None  # it could not lose anyway (a blind append reads nothing): the pin changes nothing
    pinned_label, other_label = FOOTPRINTS[pinned].label, FOOTPRINTS[other].label
    other_label = f"the other {other_label}" if pinned == other else f"the {other_label}"
    why = (
        f"The {pinned_label} reads only partitions {other_label} does not write, and Delta's conflict "
        f"checker compares only the loser's reads with the winner's files, so {other_label} cannot fail it, "
        "pinned or not"
    )
    if not exposure(other, pinned, serializable=spec.serializable, databricks=spec.databricks):
        return replace(
            draft,
            level=NEVER,
            granularity="none",
            mechanism=why + f"; nor can {other_label} fail (unpinned the {pinned_label} could fail with "
            "{unpinned}).",
            source=source,
            safe=pair.pinned,
        )
    return replace(
        draft,
        extra=(*draft.extra, why + f": only {other_label} can fail."),
        source=source,
        safe=pair.pinned,
    )


def _same_files_is_certain(pair: _Pair, draft: _Draft) -> _Draft | None:
    if not pair.traits.same_files or draft.granularity != "file" or draft.level is not CAN:
        return None
    return replace(
        draft,
        level=WILL,
        extra=(
            *draft.extra,
            (
                "They touch the same files, so this is certain, not data-dependent: whenever the one that "
                "can fail is still in flight when the other commits, it fails."
            ),
        ),
    )


def _identity_columns(pair: _Pair, draft: _Draft) -> _Draft | None:
    if not pair.traits.identity_columns:
        return None
    if not (FOOTPRINTS[pair.a].inserts_rows and FOOTPRINTS[pair.b].inserts_rows):
        return None
    note = (
        "The table has an identity column: both insert rows and so both update its high-water mark in the "
        "metadata, so the second to commit fails with MetadataChangedException."
    )
    # A seed "never" explained why they could not conflict: that reason no longer applies, replace it.
    if draft.level is NEVER:
        draft = replace(draft, mechanism=note, data_conflict=False)
    else:
        extra = f"Besides, t{note[1:-1]}, even a blind append."
        draft = replace(draft, extra=(*draft.extra, extra))
    return replace(
        draft,
        level=WILL,
        granularity="table",
        force_exceptions=(ConflictKind.METADATA_CHANGED,),
        all_lose=True,
        source=draft.source + "; 001/004 'Tables with identity columns don't support concurrent "
        "transactions'; reference §3.3",
    )


#: The trait adjustments, applied in this order to the seed cell.
ADJUSTMENTS: tuple[Adjustment, ...] = (
    Adjustment(
        "allow_listed_metadata",
        "OSS Delta 4.1+: a feature enablement through an allow-listed property (ENABLE_FEATURE) fails no "
        "concurrent writer that changes no metadata itself; Databricks keeps 'metadata changes fail all'.",
        _allow_listed_metadata,
    ),
    Adjustment(
        "databricks_dv_optimize",
        "Databricks without row-level concurrency: with deletion vectors a plain OPTIMIZE never conflicts "
        "with DML or another plain OPTIMIZE (ZORDER BY still does). OSS Delta has no such rule (§3.5).",
        _databricks_dv_optimize,
    ),
    Adjustment(
        "disjoint_partition_pins",
        "A side whose literal partition predicates exclude every partition the other writes cannot lose a "
        "file- or row-level conflict, whatever the other's pinning (Delta checks only the loser's reads); "
        "both pinned, the pair never conflicts. Schema changes (table-wide) and VACUUM's hazard remain.",
        _disjoint_partition_pins,
    ),
    Adjustment(
        "same_files_is_certain",
        "When both are known to touch the same files, a file-level 'can' is a 'will'.",
        _same_files_is_certain,
    ),
    Adjustment(
        "identity_columns",
        "With an identity column, two row-inserting writers both change metadata: always a conflict.",
        _identity_columns,
    ),
    *(Adjustment(name, doc, apply) for name, doc, apply in CLUSTERING_ADJUSTMENTS),
)

#: Recorded in Verdict.rules when an _RLC profile falls back to its file-level twin.
RLC_FALLBACK = "rlc_needs_unpartitioned_dv_table"


# ---------------------------------------------------------------------------------------------------------
def _names(kinds: tuple[ConflictKind, ...]) -> str:
    names = [EXCEPTION_NAMES[k] for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _fail(a: OpKind, b: OpKind, losers: tuple[OpKind, ...], safe: tuple[bool, bool]) -> str:
    if len(losers) > 1 or (a == b and losers and not any(safe)):
        return "whichever commits second fails"
    if not losers:
        return "neither fails"
    unpinned = "unpinned " if a == b else ""
    return f"only the {unpinned}{FOOTPRINTS[losers[0]].label} can fail (when the other commits first)"


def _canonical(a: OpKind, b: OpKind, pins: tuple[bool, bool]) -> tuple[OpKind, OpKind, tuple[bool, bool]]:
    classes, ops = list(SeedRow), list(OpKind)

    def key(side: tuple[OpKind, bool]) -> tuple[int, int, bool]:
        op, pinned = side
        return classes.index(FOOTPRINTS[op].op_class), ops.index(op), not pinned

    (first, first_pin), (second, second_pin) = sorted(((a, pins[0]), (b, pins[1])), key=key)
    return first, second, (first_pin, second_pin)


def can_conflict(
    op_a: OpKind | str,
    op_b: OpKind | str,
    *,
    profile: EngineProfile | str = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
    pinned_a: bool | None = None,
    pinned_b: bool | None = None,
) -> Verdict:
    """Answer whether ``op_a`` and ``op_b``, running concurrently on one table, can make either one fail.

    Symmetric: ``can_conflict(a, b, pinned_a=x, pinned_b=y) == can_conflict(b, a, pinned_a=y, pinned_b=x)``;
    ``Verdict.losers`` says which can fail.

    :param op_a: one operation.
    :param op_b: the other (may be the same kind: two runs of it).
    :param profile: the engine and isolation level.
    :param traits: the table and how the two are pinned; defaults to :class:`TableTraits` ().
    :param pinned_a: ``op_a`` reads only partitions ``op_b`` does not write (literal partition predicates),
        so ``op_b``'s commit cannot fail it, whatever ``op_b``'s own pinning. None: ``traits.pinned``.
    :param pinned_b: the same for ``op_b``.
    :raises ValueError: for a pinned side on a table that is not ``partitioned``.
    """
    traits = traits if traits is not None else TableTraits()
    pins = (
        traits.pinned if pinned_a is None else pinned_a,
        traits.pinned if pinned_b is None else pinned_b,
    )
    if any(pins) and not traits.partitioned:
        raise ValueError(
            f"pinned_a={pins[0]}, pinned_b={pins[1]} need traits.partitioned=True: only partition "
            "predicates narrow conflicts"
        )
    if any(pins) and traits.same_files:
        raise ValueError("a pinned side (disjoint files) and same_files cannot both be True")
    asked = EngineProfile(profile)
    effective = effective_profile(asked, traits)
    a, b, pins = _canonical(OpKind(op_a), OpKind(op_b), pins)
    cell = MATRIX[(effective, FOOTPRINTS[a].op_class, FOOTPRINTS[b].op_class)]
    pair = _Pair(a, b, effective, traits, pins)
    draft = _Draft(cell.level, cell.granularity, cell.mechanism, cell.source, cell.hazard)
    rules = [RLC_FALLBACK] if effective is not asked else []
    if rules:
        draft = replace(
            draft,
            extra=(
                "Row-level concurrency needs an unpartitioned table with deletion vectors, so the table "
                "without row-level concurrency applies.",
            ),
        )
    for adjustment in ADJUSTMENTS:
        changed = adjustment.apply(pair, draft)
        if changed is not None:
            draft, rules = changed, [*rules, adjustment.name]

    spec = PROFILE_SPECS[effective]
    lose_a = exposure(a, b, serializable=spec.serializable, databricks=spec.databricks)
    lose_b = exposure(b, a, serializable=spec.serializable, databricks=spec.databricks)
    unpinned = tuple(k for k in ConflictKind if k in lose_a + lose_b)
    lose_a, lose_b = (() if draft.safe[0] else lose_a), (() if draft.safe[1] else lose_b)
    derived = tuple(k for k in ConflictKind if k in lose_a + lose_b)
    if draft.level is NEVER:
        exceptions: tuple[ConflictKind, ...] = ()
        losers: tuple[OpKind, ...] = ()
    else:
        possible = derived if draft.data_conflict else ()
        exceptions = tuple(k for k in ConflictKind if k in possible + draft.force_exceptions)
        losers = tuple(op for op, lost in ((a, lose_a), (b, lose_b)) if lost or draft.all_lose)
        losers = tuple(dict.fromkeys(losers))
    label_b = FOOTPRINTS[b].label
    reason = draft.mechanism.format(
        a=FOOTPRINTS[a].label,
        b=f"another {label_b}" if a == b else label_b,
        exc=_names(derived) if derived else "",
        unpinned=_names(unpinned) if unpinned else "nothing",
        fail=_fail(a, b, losers, draft.safe),
    )
    reason = " ".join((reason[0].upper() + reason[1:], *draft.extra))
    return Verdict(
        level=draft.level,
        exceptions=exceptions,
        reason=reason,
        source=draft.source,
        losers=losers,
        hazard=draft.hazard,
        profile=effective,
        rules=tuple(rules),
    )
