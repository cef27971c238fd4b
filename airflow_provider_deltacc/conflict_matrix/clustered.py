"""Liquid-clustered tables: the two named adjustments measured on delta-spark 4.4 (OSS Delta).

Measured with two writers on a ``CLUSTER BY (k)`` table, one file per clustering value, the loser held
after it read its snapshot (``tests/integration/advisor/test_clustered_pairs_on_delta.py``):

- A MERGE, UPDATE or DELETE in flight failed with ConcurrentAppendException **every time** a blind append,
  another MERGE/UPDATE/DELETE or an OPTIMIZE (incremental clustering or ``FULL``) committed first, with or
  without a predicate on the clustering column, and when the two predicates named *different* clustering
  values. OSS Delta's concurrent-append check narrows only by partition predicates; a clustered table has
  no partitions, so clustering-column predicates reduce nothing: on a clustered table these file-level
  "can" cells are "will" (adjustment ``clustered_dml_always_conflicts``, OSS only; Databricks' row-level
  concurrency is a different mechanism and keeps its cells).
- A blind append in flight committed against every one of them (the seed cells already say so).
- ``ALTER TABLE … CLUSTER BY`` on the clustered table failed none of them: it commits only the
  ``delta.clustering`` domain metadata, not a Metadata action (adjustment ``cluster_by_is_domain_metadata``;
  on a table that is not clustered yet it enables the table feature, a Protocol change, and keeps the
  schema-change cells). Two concurrent CLUSTER BYs
  collide on that domain with ConcurrentTransactionException (Delta's ConflictChecker; not measured: an
  ALTER cannot be held at a gate), and a real schema change still fails an in-flight CLUSTER BY.

Not measured, so not changed: OPTIMIZE as the loser (it evaluates no row condition to hold it at), two
OPTIMIZEs, INSERT … SELECT and overwrites.

Each adjustment is ``(name, doc, apply)``; :mod:`.rules` wraps them as ``Adjustment`` s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from airflow_provider_deltacc.conflict_matrix.profiles import EngineProfile
from airflow_provider_deltacc.conflict_matrix.table import Level
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind

if TYPE_CHECKING:
    from airflow_provider_deltacc.conflict_matrix.rules import _Draft, _Pair

#: The DML measured as the held loser, and the commits measured to fail it every time.
MEASURED_LOSERS = frozenset({OpKind.MERGE, OpKind.UPDATE, OpKind.DELETE})
MEASURED_WINNERS = frozenset(
    {OpKind.BLIND_APPEND, OpKind.MERGE, OpKind.UPDATE, OpKind.DELETE, OpKind.OPTIMIZE}
)
_MEASURED = "measured on delta-spark 4.4 with the loser held after reading its snapshot (docs/clustering.md)"
_NO_NARROWING = (
    "On a liquid-clustered table this is certain, even with predicates on the clustering columns that "
    "select different values: OSS Delta narrows the concurrent-append check only by partition predicates "
    "and a clustered table has none, so any files committed while a MERGE, UPDATE or DELETE is in flight "
    "fail it (measured). Serialize them: writers taking turns through their write leases, write windows, or "
    "land concurrent sources with the staging group and merge once."
)


def _clustered_dml_always_conflicts(pair: _Pair, draft: _Draft) -> _Draft | None:
    if not pair.traits.clustered or pair.profile is not EngineProfile.OSS_SERIALIZABLE:
        return None
    if draft.level is not Level.CAN or draft.granularity != "file":
        return None
    ops = {pair.a, pair.b}
    if not (ops & MEASURED_LOSERS) or not ops <= MEASURED_WINNERS:
        return None
    return replace(
        draft,
        level=Level.WILL,
        extra=(*draft.extra, _NO_NARROWING),
        source=draft.source + "; " + _MEASURED,
    )


def _cluster_by_is_domain_metadata(pair: _Pair, draft: _Draft) -> _Draft | None:
    ops = {pair.a, pair.b}
    if not pair.traits.clustered or OpKind.CLUSTER_BY not in ops:
        return None
    if OpKind.SCHEMA_CHANGE in ops or OpKind.VACUUM in ops:
        return None
    source = "Delta ConflictChecker.checkIfDomainMetadataConflict; " + _MEASURED
    if ops == {OpKind.CLUSTER_BY}:
        return replace(
            draft,
            level=Level.WILL,
            granularity="table",
            mechanism=(
                "Both commit the delta.clustering domain metadata, so {fail} with "
                "ConcurrentTransactionException ('A conflicting metadata domain delta.clustering is added')."
            ),
            source=source,
            force_exceptions=(ConflictKind.CONCURRENT_TRANSACTION,),
            all_lose=True,
            data_conflict=False,
        )
    return replace(
        draft,
        level=Level.NEVER,
        granularity="none",
        mechanism=(
            "{a} and {b} never fail each other: ALTER TABLE … CLUSTER BY commits only the delta.clustering "
            "domain metadata, not a Metadata action, so writers in flight commit over it (measured for "
            "appends, MERGE, UPDATE and DELETE); files written before it keep their old clustering until "
            "OPTIMIZE FULL."
        ),
        source=source,
    )


_Apply = Callable[["_Pair", "_Draft"], "_Draft | None"]

#: ``(name, doc, apply)`` of the clustered-table adjustments, in the order :mod:`.rules` applies them.
CLUSTERING_ADJUSTMENTS: tuple[tuple[str, str, _Apply], ...] = (
    (
        "cluster_by_is_domain_metadata",
        "ALTER TABLE … CLUSTER BY commits only domain metadata: it fails no writer (measured), and two of "
        "them collide with ConcurrentTransactionException.",
        _cluster_by_is_domain_metadata,
    ),
    (
        "clustered_dml_always_conflicts",
        "OSS, liquid-clustered table: a MERGE/UPDATE/DELETE in flight always fails when an append, DML or "
        "OPTIMIZE commits first; clustering-column predicates do not narrow it (measured).",
        _clustered_dml_always_conflicts,
    ),
)
