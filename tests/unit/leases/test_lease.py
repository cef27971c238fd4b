"""Leases, lease requests and partition scopes."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import Lease, LeaseRequest, format_holder, parse_op_kind
from airflow_provider_deltacc.leases.partitions import format_scope, normalize_scope, scopes_overlap
from tests.unit.leases.helpers import T0

pytestmark = pytest.mark.unit


def make_lease(**overrides: object) -> Lease:
    fields: dict[str, object] = {
        "lease_id": "abc",
        "table": "sales.orders",
        "holder": "ingest.merge_orders/run1",
        "op_kind": OpKind.MERGE,
        "partitions": [{"date": "2026-11-20"}],
        "acquired_at": T0,
        "heartbeat_at": T0 + timedelta(seconds=30),
        "ttl_s": 60.0,
    }
    fields.update(overrides)
    return Lease(**fields)  # type: ignore[arg-type]


def test_expiry_counts_from_the_last_heartbeat() -> None:
    lease = make_lease()
    assert lease.expires_at == T0 + timedelta(seconds=90)
    assert lease.is_active(T0 + timedelta(seconds=89))
    assert not lease.is_active(T0 + timedelta(seconds=90))
    assert lease.end_time(T0 + timedelta(seconds=89)) is None
    assert lease.end_time(T0 + timedelta(hours=1)) == lease.expires_at


def test_a_released_lease_is_inactive_and_ended_at_its_release() -> None:
    lease = make_lease(released_at=T0 + timedelta(seconds=40))
    assert not lease.is_active(T0 + timedelta(seconds=41))
    assert lease.end_time(T0 + timedelta(seconds=41)) == T0 + timedelta(seconds=40)


def test_dict_round_trip() -> None:
    lease = make_lease(released_at=T0 + timedelta(seconds=40))
    data = lease.to_dict()
    assert data["op_kind"] == "merge"
    assert data["acquired_at"] == "2026-11-20T10:02:00+00:00"
    assert Lease.from_dict(data) == lease
    assert Lease.from_dict(make_lease(partitions=None).to_dict()).partitions is None


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="has no timezone"):
        make_lease().is_active(T0.replace(tzinfo=None))


def test_describe_names_kind_partitions_and_holder() -> None:
    assert make_lease().describe() == "MERGE lease on date=2026-11-20 by ingest.merge_orders/run1"
    assert "the whole table" in make_lease(partitions=None).describe()


def test_request_normalizes_kind_and_partitions() -> None:
    request = LeaseRequest("t", "h", "MERGE", [{"date": 20261120}])  # type: ignore[arg-type,dict-item]
    assert request.op_kind is OpKind.MERGE
    assert request.partitions == [{"date": "20261120"}]
    assert parse_op_kind("optimize_zorder") is OpKind.OPTIMIZE_ZORDER


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": ""}, "table='' must be a non-empty string"),
        ({"holder": "  "}, "holder='  ' must be a non-empty string"),
        ({"op_kind": "upsert"}, "op_kind='upsert' is not an operation kind; use one of BLIND_APPEND"),
        ({"ttl_s": 0}, "ttl_s=0 must be a positive number of seconds"),
        ({"partitions": []}, "partitions=[] names no partition; pass None to mean the whole table"),
        ({"partitions": {"date": "x"}}, "partitions={'date': 'x'} must be a list of partition specs"),
        ({"partitions": [{}]}, "partitions has the entry {}; each entry must be a non-empty mapping"),
    ],
)
def test_request_validation_names_field_value_and_fix(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"table": "t", "holder": "h", "op_kind": OpKind.MERGE}
    fields.update(kwargs)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        LeaseRequest(**fields)  # type: ignore[arg-type]


def test_holder_format() -> None:
    assert format_holder("ingest", "merge_orders", "manual__1", 3) == "ingest.merge_orders[3]/manual__1"
    assert format_holder("ingest", "merge_orders", "manual__1") == "ingest.merge_orders/manual__1"


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        (None, [{"date": "1"}], True),
        ([{"date": "1"}], [{"date": "1"}], True),
        ([{"date": "1"}], [{"date": "2"}], False),
        ([{"date": "1"}, {"date": "2"}], [{"date": "2"}], True),
        ([{"date": "1"}], [{"date": "1", "region": "eu"}], True),
        ([{"date": "1", "region": "us"}], [{"date": "1", "region": "eu"}], False),
        ([{"date": "1"}], [{"region": "eu"}], True),
    ],
)
def test_scope_overlap(a: list[dict[str, str]] | None, b: list[dict[str, str]] | None, overlap: bool) -> None:
    assert scopes_overlap(a, b) is overlap
    assert scopes_overlap(b, a) is overlap


def test_scope_normalization_and_format() -> None:
    scope = normalize_scope([{"date": "1", "region": "eu"}, {"date": "1", "region": "eu"}])
    assert scope == [{"date": "1", "region": "eu"}]
    assert format_scope(scope) == "date=1/region=eu"
    assert format_scope(None) == "the whole table"
