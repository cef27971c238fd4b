"""ConflictKind values and the Conflict record."""

from __future__ import annotations

import json

import pytest

from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind

pytestmark = pytest.mark.unit


def test_kind_values_are_lowercase_names() -> None:
    assert [k.name for k in ConflictKind] == [
        "APPEND",
        "DELETE_READ",
        "DELETE_DELETE",
        "METADATA_CHANGED",
        "PROTOCOL_CHANGED",
        "CONCURRENT_TRANSACTION",
        "CONCURRENT_WRITE",
        "MAX_COMMIT_ATTEMPTS",
    ]
    for kind in ConflictKind:
        assert kind.value == kind.name.lower()
        assert isinstance(kind, str)
        assert ConflictKind(kind.value) is kind


def test_conflict_round_trips_through_json() -> None:
    conflict = Conflict(
        kind=ConflictKind.DELETE_READ,
        table="spark_catalog.default.orders",
        winning_version=41,
        winning_operation="OPTIMIZE",
        partition="[date=2026-11-20]",
        message="[DELTA_CONCURRENT_DELETE_READ.WITH_PARTITION_HINT] Transaction conflict detected",
        exception_type="delta.exceptions.captured.ConcurrentDeleteReadException",
        source="delta-spark",
        create_race=False,
    )
    data = json.loads(json.dumps(conflict.to_dict()))

    assert data["kind"] == "delete_read"
    assert Conflict.from_dict(data) == conflict


def test_conflict_from_dict_defaults_and_ignores_unknown_keys() -> None:
    conflict = Conflict.from_dict({"kind": "append", "added_in_a_later_version": 1})

    assert conflict == Conflict(kind=ConflictKind.APPEND)


def test_summary_with_all_details() -> None:
    conflict = Conflict(
        kind=ConflictKind.APPEND,
        table="orders",
        winning_version=41,
        winning_operation="MERGE",
        partition="[date=2026-11-20]",
    )
    assert (
        conflict.summary() == "APPEND on orders partition [date=2026-11-20] (winner: MERGE v41) [delta-spark]"
    )


def test_summary_with_few_details() -> None:
    assert Conflict(kind=ConflictKind.METADATA_CHANGED, source="delta-rs").summary() == (
        "METADATA_CHANGED [delta-rs]"
    )
    assert Conflict(kind=ConflictKind.PROTOCOL_CHANGED, winning_version=0, create_race=True).where() == (
        "(winner: v0) (concurrent table creation)"
    )


def test_conflict_is_frozen() -> None:
    conflict = Conflict(kind=ConflictKind.APPEND)
    with pytest.raises(AttributeError):
        conflict.table = "x"  # type: ignore[misc]
