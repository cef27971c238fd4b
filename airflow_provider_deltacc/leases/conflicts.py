"""Which leases and windows must not overlap a maintenance run, per the conflict matrix and partitions.

Maintenance and writers meet through leases in both directions: the gate and a maintenance run's own
lease wait for conflicting writers (:func:`maintenance_conflicts`), and a writer waits briefly for a
conflicting maintenance lease (:func:`maintenance_lease_conflicts`). Both use :func:`clash`. Writers wait
for each other only where the matrix says they *will* conflict, and after a lost conflict for the writers
ahead of them that *can* (:func:`writer_turn_conflicts`; see
:mod:`airflow_provider_deltacc.turns.lease_turns`).

Policy beyond the matrix: VACUUM does not take part in optimistic concurrency, but it deletes files a
running writer has written and not yet committed when its retention is shorter than the writer's run
time (the matrix's VACUUM hazard), so it never overlaps any other lease on the table, whatever the
partitions, including another VACUUM (two full listings at once buy nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from airflow_provider_deltacc.conflict_matrix import (
    FOOTPRINTS,
    EngineProfile,
    Level,
    TableTraits,
    Verdict,
    can_conflict,
)
from airflow_provider_deltacc.conflict_matrix.ops import exposure
from airflow_provider_deltacc.conflict_matrix.profiles import PROFILE_SPECS
from airflow_provider_deltacc.contract.op_kinds import MAINTENANCE_KINDS, OpKind
from airflow_provider_deltacc.leases.lease import Lease
from airflow_provider_deltacc.leases.partitions import PartitionSpec, scopes_overlap
from airflow_provider_deltacc.leases.store import ConflictPredicate

Scope = Sequence[PartitionSpec] | None


@dataclass(frozen=True)
class Clash:
    """Whether two operations on one table must not run at the same time, and why.

    :param blocks: True if they must not overlap.
    :param reason: the matrix's (or the VACUUM policy's) explanation.
    """

    blocks: bool
    reason: str


def clash(
    op_a: OpKind,
    scope_a: Scope,
    op_b: OpKind,
    scope_b: Scope,
    *,
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
) -> Clash:
    """Whether ``op_a`` on ``scope_a`` and ``op_b`` on ``scope_b`` must not overlap: VACUUM never overlaps a
    running operation; any other pair as :func:`pair_verdict` (same parameters) judges it unsafe."""
    if OpKind.VACUUM in (op_a, op_b):
        other = op_b if op_a is OpKind.VACUUM else op_a
        return Clash(True, f"VACUUM never overlaps a running {other.name}: it could delete files in use")
    verdict = pair_verdict(op_a, scope_a, op_b, scope_b, profile=profile, traits=traits)
    return Clash(verdict.unsafe, verdict.reason)


def pair_verdict(
    op_a: OpKind,
    scope_a: Scope,
    op_b: OpKind,
    scope_b: Scope,
    *,
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
) -> Verdict:
    """The conflict matrix's verdict on two operations of one table running at once, given their partitions.

    Each side is pinned when what it reads (its scope) excludes every partition the other writes (the
    other's scope): Delta's conflict checker only compares a loser's reads with the winner's files, so a
    pinned side cannot lose whatever the other's pinning (the matrix keeps table-wide conflicts such as
    schema changes). A lease has one scope for what it reads and writes, so both sides come out alike. A
    liquid-clustered table has no partitions: nothing is pinned there, whatever scopes the two name.

    :param op_a: one operation.
    :param scope_a: its partitions, or None for the whole table.
    :param op_b: the other operation.
    :param scope_b: its partitions, or None for the whole table.
    :param profile: the engine profile.
    :param traits: the table's traits; each side's pinning is decided here from the two scopes.
    """
    traits = traits if traits is not None else TableTraits()
    # A clustered table has no partitions: whatever scopes the two name, nothing is pinned.
    pinned_a = not traits.clustered and not scopes_overlap(scope_a, scope_b)  # a's reads against b's writes
    pinned_b = not traits.clustered and not scopes_overlap(scope_b, scope_a)  # b's reads against a's writes
    if pinned_a or pinned_b:
        pair_traits = replace(traits, partitioned=True, pinned=False, same_files=False)
    else:
        pair_traits = replace(traits, pinned=False)
    return can_conflict(op_a, op_b, profile=profile, traits=pair_traits, pinned_a=pinned_a, pinned_b=pinned_b)


def writer_turn_conflicts(
    op_kind: OpKind,
    partitions: Scope = None,
    *,
    levels: frozenset[Level] = frozenset({Level.WILL}),
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
) -> ConflictPredicate:
    """The other writers (leases or queued tickets) a writer lets go first: those whose pair verdict with it
    is one of ``levels``. Maintenance leases are not writers (see :func:`maintenance_lease_conflicts`).

    :param op_kind: the writer's operation.
    :param partitions: the partitions it writes, or None for the whole table.
    :param levels: ``will`` to serialize only pairs that always conflict (the first turn); add ``can`` to let
        go first every writer that might (a retry after a lost conflict).
    :param profile: the engine profile.
    :param traits: the table's traits.
    """

    def conflicts(other: Lease) -> bool:
        if other.op_kind in MAINTENANCE_KINDS:
            return False
        level = writers_pair_level(
            op_kind, partitions, other.op_kind, other.partitions, profile=profile, traits=traits
        )
        return level in levels

    return conflicts


def writers_pair_level(
    op_a: OpKind,
    scope_a: Scope,
    op_b: OpKind,
    scope_b: Scope,
    *,
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
) -> Level:
    """How surely two writers of one table fail each other: the matrix's level, raised from ``can`` to
    ``will`` when one of them reads every file the other can write (it reads the whole table, or its pinned
    partitions cover the other's) and the other commits what Delta's conflict checker always fails such a
    reader with. Two unpinned MERGEs, two MERGEs pinned to the same partition, or an unpinned UPDATE and a
    blind append at Serializable are ``will``.

    :param op_a: one writer's operation.
    :param scope_a: its partitions, or None for the whole table.
    :param op_b: the other's.
    :param scope_b: its partitions, or None for the whole table.
    :param profile: the engine profile.
    :param traits: the table's traits.
    """
    level = pair_verdict(op_a, scope_a, op_b, scope_b, profile=profile, traits=traits).level
    if level is Level.CAN and (
        _fails_reader(op_a, scope_a, op_b, scope_b, profile)
        or _fails_reader(op_b, scope_b, op_a, scope_a, profile)
    ):
        return Level.WILL
    return level


def _fails_reader(reader: OpKind, read: Scope, other: OpKind, written: Scope, profile: EngineProfile) -> bool:
    covered = read is None or (written is not None and all(spec in read for spec in written))
    profile_spec = PROFILE_SPECS[profile]
    exposed = exposure(
        reader, other, serializable=profile_spec.serializable, databricks=profile_spec.databricks
    )
    return covered and FOOTPRINTS[reader].reads and bool(exposed)


def maintenance_conflicts(
    maintenance_op: OpKind,
    partitions: Scope = None,
    *,
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
) -> ConflictPredicate:
    """The predicate a maintenance run acquires its lease with: blocked by any lease it must not overlap.

    :param maintenance_op: OPTIMIZE, OPTIMIZE_ZORDER or VACUUM.
    :param partitions: the partitions it works on, or None for the whole table.
    :param profile: the engine profile.
    :param traits: the table's traits.
    """

    def conflicts(lease: Lease) -> bool:
        return clash(
            maintenance_op, partitions, lease.op_kind, lease.partitions, profile=profile, traits=traits
        ).blocks

    return conflicts


def maintenance_lease_conflicts(
    op_kind: OpKind,
    partitions: Scope = None,
    *,
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
) -> ConflictPredicate:
    """The predicate a writer acquires its lease with: blocked only by a conflicting maintenance lease.

    Writers never wait for each other (optimistic concurrency and the commit loop handle that); they
    wait for an OPTIMIZE that could fail them, or a VACUUM.

    :param op_kind: the writer's operation.
    :param partitions: the partitions it writes, or None for the whole table.
    :param profile: the engine profile.
    :param traits: the table's traits.
    """

    def conflicts(lease: Lease) -> bool:
        if lease.op_kind not in MAINTENANCE_KINDS:
            return False
        return clash(
            lease.op_kind, lease.partitions, op_kind, partitions, profile=profile, traits=traits
        ).blocks

    return conflicts


def any_lease(_lease: Lease) -> bool:
    """The predicate of a run that must be alone on its table: every live lease blocks it (storage that
    cannot exclude concurrent writers, see :mod:`airflow_provider_deltacc.contract.storage_safety`)."""
    return True
