"""One table, many spellings, one set of leases: on SQLite and a real PostgreSQL server, a writer and an
OPTIMIZE that spell a table differently are kept apart by the gate, two writers that spell it differently
take turns, and leases recorded under a spelling before the table had one key still count after an upgrade."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, insert

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import decide_gate
from airflow_provider_deltacc.leases import LeaseStore, store_from_url
from airflow_provider_deltacc.leases.lease import Lease
from airflow_provider_deltacc.leases.sql_schema import lease_to_row, leases, metadata
from airflow_provider_deltacc.turns import LeaseTurns
from tests.unit.leases.helpers import T0, FakeClock, grant

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

#: Pairs of spellings of one table: scheme aliases, a trailing slash, a file URI against a bare path, dot
#: segments, host case, Azure's blob and dfs hosts, a catalog name's case, quoting and default parts.
SPELLINGS = [
    ("s3a://lake/{t}/", "s3://lake/{t}"),
    ("s3n://Lake/x/../{t}", "s3a://lake//{t}"),
    ("/data/./{t}/", "file:///data/{t}"),
    ("file://localhost/data/{t}", "file:/data/{t}"),
    ("wasbs://c@Acct.blob.core.windows.net/{t}", "abfss://c@acct.dfs.core.windows.net/{t}/"),
    ("Sales.`{t}`", "spark_catalog.sales.{t}"),
    ("{t}", "`SPARK_CATALOG`.Default.{t}"),
]


def _spelled(pair: tuple[str, str]) -> tuple[str, str]:
    name = f"t{uuid.uuid4().hex[:8]}"
    return pair[0].format(t=name), pair[1].format(t=name)


@pytest.mark.parametrize("pair", SPELLINGS, ids=[a for a, _ in SPELLINGS])
def test_a_writer_and_an_optimize_that_spell_one_table_differently_are_kept_apart(
    store: LeaseStore, pair: tuple[str, str]
) -> None:
    writers_spelling, optimizers_spelling = _spelled(pair)
    merge = grant(store, writers_spelling, OpKind.MERGE)
    decision = decide_gate(optimizers_spelling, OpKind.OPTIMIZE, store=store)
    assert not decision.go and "MERGE lease" in decision.reason, decision
    store.release(merge.lease_id)
    assert decide_gate(optimizers_spelling, OpKind.OPTIMIZE, store=store).go


def test_two_writers_that_spell_one_table_differently_take_turns(store: LeaseStore, clock: FakeClock) -> None:
    first_spelling, second_spelling = _spelled(SPELLINGS[0])
    first = grant(store, first_spelling, OpKind.MERGE, holder="ingest.a")
    clock.advance(1)
    second = grant(store, second_spelling, OpKind.MERGE, holder="ingest.b")
    assert first.table == second.table == store.active(first_spelling)[0].table
    assert [lease.lease_id for lease in LeaseTurns(store, second, timeout_s=5).ahead()] == [first.lease_id]
    assert LeaseTurns(store, first, timeout_s=5).ahead() == []  # granted first: nobody is ahead of it
    store.release(first.lease_id)
    assert LeaseTurns(store, second, timeout_s=5).ahead() == []


def test_leases_recorded_under_a_spelling_still_count_after_an_upgrade(
    store_url: str, clock: FakeClock
) -> None:
    spelled, other = _spelled(SPELLINGS[2])
    engine = create_engine(store_url)
    try:
        metadata.create_all(engine)
        old = Lease(
            lease_id=uuid.uuid4().hex,
            table=spelled,  # as a store before one key per table recorded it
            holder="ingest.merge_orders",
            op_kind=OpKind.MERGE,
            partitions=None,
            acquired_at=T0,
            heartbeat_at=T0,
            ttl_s=300.0,
        )
        with engine.begin() as conn:
            conn.execute(insert(leases).values(**lease_to_row(old)))
    finally:
        engine.dispose()

    with store_from_url(store_url, clock=clock) as upgraded:
        [active] = upgraded.active(other)
        assert active.lease_id == old.lease_id and active.table == upgraded.active(spelled)[0].table
        assert not decide_gate(other, OpKind.OPTIMIZE, store=upgraded).go
        assert [lease.lease_id for lease in upgraded.history(spelled)] == [old.lease_id]
