"""The clustered-table adjustments: what two real writers on a clustered table showed (OSS), as verdicts."""

from __future__ import annotations

import itertools

import pytest

from airflow_provider_deltacc.conflict_matrix import EngineProfile, Level, TableTraits, can_conflict
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import OpKind

pytestmark = pytest.mark.unit

CLUSTERED = TableTraits(clustered=True)
DML = (OpKind.MERGE, OpKind.UPDATE, OpKind.DELETE)
OSS = EngineProfile.OSS_SERIALIZABLE


def test_dml_on_a_clustered_table_always_loses_to_files_committed_meanwhile() -> None:
    for loser, winner in itertools.product(DML, (*DML, OpKind.BLIND_APPEND, OpKind.OPTIMIZE)):
        verdict = can_conflict(loser, winner, traits=CLUSTERED)
        assert verdict.level is Level.WILL, (loser, winner)
        assert loser in verdict.losers and ConflictKind.APPEND in verdict.exceptions
        assert "clustered_dml_always_conflicts" in verdict.rules
        assert "clustering columns" in verdict.reason and "staging group" in verdict.reason
        # The same pair on a plain unpartitioned table keeps the seed's data-dependent "can".
        assert can_conflict(loser, winner).level is Level.CAN


def test_clustering_changes_nothing_where_nothing_was_measured() -> None:
    assert can_conflict(OpKind.BLIND_APPEND, OpKind.BLIND_APPEND, traits=CLUSTERED).level is Level.NEVER
    assert can_conflict(OpKind.OPTIMIZE, OpKind.BLIND_APPEND, traits=CLUSTERED).level is Level.NEVER
    assert can_conflict(OpKind.OPTIMIZE, OpKind.OPTIMIZE, traits=CLUSTERED).level is Level.CAN
    assert can_conflict(OpKind.INSERT_SELECT, OpKind.MERGE, traits=CLUSTERED).level is Level.CAN
    for profile in EngineProfile:
        if profile is not OSS:
            verdict = can_conflict(OpKind.MERGE, OpKind.MERGE, profile=profile, traits=CLUSTERED)
            assert "clustered_dml_always_conflicts" not in verdict.rules, profile


def test_cluster_by_on_a_table_not_yet_clustered_is_a_protocol_change() -> None:
    verdict = can_conflict(OpKind.CLUSTER_BY, OpKind.BLIND_APPEND)
    assert verdict.level is Level.WILL and verdict.losers == (OpKind.BLIND_APPEND,)
    assert ConflictKind.PROTOCOL_CHANGED in verdict.exceptions


def test_cluster_by_fails_no_writer_but_collides_with_itself() -> None:
    for op in (OpKind.BLIND_APPEND, *DML, OpKind.OPTIMIZE):
        verdict = can_conflict(OpKind.CLUSTER_BY, op, traits=CLUSTERED)
        assert verdict.level is Level.NEVER, (op, verdict.reason)
        assert "domain metadata" in verdict.reason
    twice = can_conflict(OpKind.CLUSTER_BY, OpKind.CLUSTER_BY, traits=CLUSTERED)
    assert twice.level is Level.WILL and twice.exceptions == (ConflictKind.CONCURRENT_TRANSACTION,)
    schema = can_conflict(OpKind.CLUSTER_BY, OpKind.SCHEMA_CHANGE, traits=CLUSTERED)
    assert schema.level is Level.WILL and OpKind.CLUSTER_BY in schema.losers
    assert ConflictKind.METADATA_CHANGED in schema.exceptions
