"""Engine profiles (which conflict table applies) and table traits (what the cells depend on)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class EngineProfile(StrEnum):
    """Which engine and isolation level commits to the table: each has its own conflict table.

    - ``OSS_SERIALIZABLE``: open-source Delta on Spark (docs.delta.io, seed 000). OSS Delta validates every
      data-changing commit at Serializable (``delta.isolationLevel`` must be Serializable, reference §3.1);
      there is no row-level concurrency in OSS (§3.5).
    - ``FABRIC_SERIALIZABLE``: Microsoft Fabric (seed 002). Its table of concurrent pairs agrees with the
      OSS table in every cell (Fabric runs OSS Delta, Serializable only, OPTIMIZE at SnapshotIsolation), so
      it is an *alias*: ``EngineProfile.FABRIC_SERIALIZABLE is EngineProfile.OSS_SERIALIZABLE``.
    - ``DATABRICKS_WRITE_SERIALIZABLE`` / ``DATABRICKS_SERIALIZABLE``: Databricks without row-level
      concurrency (a partitioned table, deletion vectors off, or a runtime before 14.2/14.3): seeds
      001/004 "Write conflicts without row-level concurrency" and seed 003. WriteSerializable is
      Databricks' default.
    - ``DATABRICKS_WRITE_SERIALIZABLE_RLC`` / ``DATABRICKS_SERIALIZABLE_RLC``: Databricks with row-level
      concurrency (seeds 001/004 "with row-level concurrency"). It only applies to an unpartitioned table
      with deletion vectors (a liquid-clustered table is unpartitioned and has them by default); for any other
      table :func:`can_conflict` falls back to the profile without ``_RLC``.
    """

    OSS_SERIALIZABLE = "oss_serializable"
    FABRIC_SERIALIZABLE = "oss_serializable"  # alias: Fabric's table equals OSS's cell for cell
    DATABRICKS_WRITE_SERIALIZABLE = "databricks_write_serializable"
    DATABRICKS_SERIALIZABLE = "databricks_serializable"
    DATABRICKS_WRITE_SERIALIZABLE_RLC = "databricks_write_serializable_rlc"
    DATABRICKS_SERIALIZABLE_RLC = "databricks_serializable_rlc"


@dataclass(frozen=True)
class ProfileSpec:
    """What a profile means to the rules.

    :param serializable: blind appends count in the concurrent-append check (Serializable).
    :param row_level: row-level concurrency resolves same-file, different-row conflicts.
    :param databricks: Databricks Runtime semantics (DV-aware OPTIMIZE, metadata changes fail everyone).
    :param without_rlc: the profile to use when the table cannot have row-level concurrency.
    :param label: how tables and reasons name it.
    """

    serializable: bool
    row_level: bool
    databricks: bool
    without_rlc: EngineProfile
    label: str


PROFILE_SPECS: dict[EngineProfile, ProfileSpec] = {
    EngineProfile.OSS_SERIALIZABLE: ProfileSpec(
        True, False, False, EngineProfile.OSS_SERIALIZABLE, "OSS Delta / Fabric (Serializable only)"
    ),
    EngineProfile.DATABRICKS_WRITE_SERIALIZABLE: ProfileSpec(
        False,
        False,
        True,
        EngineProfile.DATABRICKS_WRITE_SERIALIZABLE,
        "Databricks WriteSerializable, no row-level concurrency",
    ),
    EngineProfile.DATABRICKS_SERIALIZABLE: ProfileSpec(
        True,
        False,
        True,
        EngineProfile.DATABRICKS_SERIALIZABLE,
        "Databricks Serializable, no row-level concurrency",
    ),
    EngineProfile.DATABRICKS_WRITE_SERIALIZABLE_RLC: ProfileSpec(
        False,
        True,
        True,
        EngineProfile.DATABRICKS_WRITE_SERIALIZABLE,
        "Databricks WriteSerializable with row-level concurrency",
    ),
    EngineProfile.DATABRICKS_SERIALIZABLE_RLC: ProfileSpec(
        True,
        True,
        True,
        EngineProfile.DATABRICKS_SERIALIZABLE,
        "Databricks Serializable with row-level concurrency",
    ),
}


@dataclass(frozen=True)
class TableTraits:
    """What the cells depend on besides the two operations and the engine.

    :param partitioned: the table has partition columns. Row-level concurrency needs it False.
    :param pinned: *both* operations are pinned: each reads only partitions the other does not write, through
        literal predicates on the partition columns (e.g. ``t.date = '2026-01-01'`` in MERGE ON, ``OPTIMIZE …
        WHERE``). Requires ``partitioned``. A MERGE with ``WHEN NOT MATCHED BY SOURCE``, a full overwrite or a
        predicate on data columns reads the whole table: it is not pinned. Delta's conflict checker only
        compares the *loser's* reads with the winner's files, so pinning is a property of each side: when
        only one is pinned (a pinned MERGE and a blind append or unpinned UPDATE that writes elsewhere), pass
        ``pinned_a``/``pinned_b`` to :func:`~airflow_provider_deltacc.conflict_matrix.can_conflict` instead.
    :param deletion_vectors: deletion vectors are enabled. On Databricks a plain OPTIMIZE then never conflicts
        with writers, and row-level concurrency becomes possible; in OSS Delta they change nothing, as the
        conflict checker compares file paths (reference §3.5).
    :param same_files: both operations are known to touch the same data files (two OPTIMIZEs of the same
        partitions, DML on the partition another op writes to): a file-level "can" becomes "will".
        Excludes ``pinned``.
    :param identity_columns: the table has an IDENTITY column: every insert also updates its high-water mark
        in the metadata, so two inserting writers always collide (seeds 001/004: "Tables with identity
        columns don't support concurrent transactions"; reference §3.3).
    :param clustered: the table is liquid-clustered (``CLUSTER BY``): unpartitioned, so no partition pin
        applies; what predicates on its clustering columns change is in :mod:`.clustered`. Excludes
        ``partitioned``.
    """

    partitioned: bool = False
    pinned: bool = False
    deletion_vectors: bool = False
    same_files: bool = False
    identity_columns: bool = False
    clustered: bool = False

    def __post_init__(self) -> None:
        if self.clustered and self.partitioned:
            raise ValueError("clustered=True excludes partitioned=True: a Delta table is one or the other")
        if self.pinned and not self.partitioned:
            raise ValueError("pinned=True needs partitioned=True: only partition predicates narrow conflicts")
        if self.pinned and self.same_files:
            raise ValueError("pinned (disjoint files) and same_files cannot both be True")

    def describe(self) -> str:
        """Return the traits that are set, e.g. ``partitioned, pinned``, or ``no traits``."""
        names = [name for name, value in vars(self).items() if value]
        return ", ".join(names) if names else "no traits"


def effective_profile(profile: EngineProfile, traits: TableTraits) -> EngineProfile:
    """Return ``profile``, or its non-RLC twin when the table cannot have row-level concurrency.

    Seeds 001/004: row-level concurrency needs deletion vectors and no partitions.

    :param profile: the profile asked for.
    :param traits: the table.
    """
    spec = PROFILE_SPECS[profile]
    if spec.row_level and (traits.partitioned or not traits.deletion_vectors):
        return spec.without_rlc
    return profile
