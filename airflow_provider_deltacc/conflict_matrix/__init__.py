"""The conflict matrix as data: which concurrent Delta writes can make each other fail, and why.

``can_conflict(op_a, op_b, profile=..., traits=...)`` answers with a :class:`Verdict`: ``never`` / ``can`` /
``will``, the exceptions the loser can see, which side can lose, a one-sentence reason and the seed row or
reference section behind it. The write windows' maintenance gate, the docs and the conflict advisor read it.
As Delta's conflict checker, it compares only the loser's reads with the winner's files and metadata: pass
each side's pinning (``pinned_a``/``pinned_b``) when only one side is pinned. Checked against real two-writer
runs on delta-spark in ``tests/integration/conflict_matrix``.

- ``ops``: :class:`SeedRow` (the seed tables' rows/columns) for each ``OpKind`` (imported from its one home,
  the operation registry :mod:`airflow_provider_deltacc.contract.operations`), and the footprint of each
  operation as the conflict checker sees it (reference §3.2), which derives the exceptions and the possible
  losers; ``ALLOW_LISTED_PROPERTIES``, the feature enablements OSS Delta 4.1+ lets concurrent writers commit
  past.
- ``profiles``: :class:`EngineProfile` (OSS = Fabric, Databricks WriteSerializable/Serializable, with and
  without row-level concurrency) and :class:`TableTraits`.
- ``table``: ``MATRIX``, the seed tables as rows of data (:class:`Cell`: level, mechanism, source).
- ``rules``: the named trait ``ADJUSTMENTS`` and :func:`can_conflict`.
- ``render``: :func:`matrix_markdown`.

VACUUM takes no part in optimistic concurrency: its verdicts are always ``never``, but against a writer
they carry ``Hazard.VACUUM_RETENTION``: with a retention shorter than the writer's run time VACUUM can
delete the writer's written-but-uncommitted files. ``Verdict.unsafe`` is True for conflicts and hazards.

Not pair properties, so not in the matrix: ConcurrentTransactionException (two writers with one txn app id
or streaming checkpoint), ConcurrentWriteException (CLONE/CONVERT/RESTORE, managed-commit upgrades) and
exhausted commit retries; and protocol races when creating a table.
"""

from __future__ import annotations

from airflow_provider_deltacc.conflict_matrix.ops import EXCEPTION_NAMES, FOOTPRINTS, SeedRow
from airflow_provider_deltacc.conflict_matrix.profiles import EngineProfile, TableTraits, effective_profile
from airflow_provider_deltacc.conflict_matrix.render import matrix_markdown
from airflow_provider_deltacc.conflict_matrix.rules import ADJUSTMENTS, Adjustment, Verdict, can_conflict
from airflow_provider_deltacc.conflict_matrix.table import MATRIX, Cell, Hazard, Level

__all__ = [
    "ADJUSTMENTS",
    "EXCEPTION_NAMES",
    "FOOTPRINTS",
    "MATRIX",
    "Adjustment",
    "Cell",
    "EngineProfile",
    "Hazard",
    "Level",
    "SeedRow",
    "TableTraits",
    "Verdict",
    "can_conflict",
    "effective_profile",
    "matrix_markdown",
]
