"""Lease-store hygiene on SQLite: the schema's version and its forward migration, the purge of old leases on
acquire (with 100,000 of them), and the ``deltacc-leases`` command."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, insert, inspect, select, text

from airflow_provider_deltacc.cli.leases import main as leases_cli
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import SqliteLeaseStore, sql_store
from airflow_provider_deltacc.leases.sql_migrations import CURRENT_VERSION, recorded_version
from airflow_provider_deltacc.leases.sql_schema import leases, schema_versions
from tests.unit.leases.helpers import T0, FakeClock, grant

pytestmark = pytest.mark.unit

TABLE = "s3://lake/orders"


@pytest.fixture(autouse=True)
def _no_purge_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql_store, "_last_purge", {})


def _old_row(table: str, ended_days_ago: float, *, released: bool) -> dict[str, object]:
    end = T0 - timedelta(days=ended_days_ago)
    return {
        "lease_id": uuid.uuid4().hex,
        "table_name": table,
        "holder": "old.task/run",
        "op_kind": OpKind.MERGE.value,
        "partitions": None,
        "acquired_at": end - timedelta(minutes=5),
        "heartbeat_at": end - timedelta(minutes=1),
        "expires_at": end,
        "ttl_s": 60.0,
        "released_at": end - timedelta(seconds=30) if released else None,
    }


def _count(path: Path) -> int:
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        counted = int(conn.execute(select(func.count()).select_from(leases)).scalar_one())
    engine.dispose()
    return counted


def test_a_store_from_before_versions_is_migrated_forward_once(tmp_path: Path) -> None:
    path = tmp_path / "leases.db"
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # the schema as version 0 left it: no version table, no expiry index
        leases.create(conn)
        conn.execute(text("DROP INDEX ix_deltacc_leases_expires"))
        conn.execute(insert(leases).values(_old_row("s3a://lake/orders/", 0.001, released=False)))
    engine.dispose()

    with SqliteLeaseStore(path, clock=FakeClock()) as store:
        assert store.ensure_schema() == CURRENT_VERSION
        assert [lease.table for lease in store.history("s3a://lake/orders")] == [TABLE]  # re-keyed
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        assert recorded_version(conn) == CURRENT_VERSION
        assert "ix_deltacc_leases_expires" in {ix["name"] for ix in inspect(conn).get_indexes(leases.name)}
    engine.dispose()


def test_an_up_to_date_store_runs_no_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "leases.db"
    SqliteLeaseStore(path).close()

    def must_not_run(_conn: object) -> None:
        raise AssertionError("a migration step ran on an up-to-date store")

    monkeypatch.setitem(sql_store.migrate.__globals__["STEPS"], 1, must_not_run)
    with SqliteLeaseStore(path) as store:
        assert store.ensure_schema() == CURRENT_VERSION


def test_a_store_migrated_by_a_newer_provider_is_used_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "leases.db"
    SqliteLeaseStore(path).close()
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(schema_versions.update().values(version=CURRENT_VERSION + 5))
    engine.dispose()
    with SqliteLeaseStore(path, clock=FakeClock()) as store:
        assert store.ensure_schema() == CURRENT_VERSION + 5
        grant(store, TABLE, OpKind.MERGE)


def test_acquiring_purges_100000_old_leases_and_keeps_the_recent_ones(tmp_path: Path) -> None:
    path = tmp_path / "leases.db"
    clock = FakeClock()
    SqliteLeaseStore(path).close()
    engine = create_engine(f"sqlite:///{path}")
    old = [_old_row(f"/lake/t{i % 50}", 8 + (i % 30), released=bool(i % 2)) for i in range(100_000)]
    recent = [_old_row(TABLE, 1, released=True), _old_row(TABLE, 6.5, released=False)]
    with engine.begin() as conn:
        conn.execute(insert(leases), old + recent)
    engine.dispose()
    assert _count(path) == 100_002

    with SqliteLeaseStore(path, clock=clock, history_retention=timedelta(days=7)) as store:
        live = grant(store, TABLE, OpKind.MERGE)
    assert _count(path) == 3  # the two recent ones and the new lease

    # Once per interval: old leases added now stay until the next purge is due.
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(insert(leases), old[:10])
    engine.dispose()
    with SqliteLeaseStore(path, clock=clock) as store:
        store.release(live.lease_id)
        grant(store, TABLE, OpKind.BLIND_APPEND)
    assert _count(path) == 14


def test_no_retention_keeps_every_lease(tmp_path: Path) -> None:
    path = tmp_path / "leases.db"
    SqliteLeaseStore(path).close()
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(insert(leases), [_old_row(TABLE, 400, released=True)])
    engine.dispose()
    with SqliteLeaseStore(path, clock=FakeClock(), history_retention=None) as store:
        grant(store, TABLE, OpKind.MERGE)
    assert _count(path) == 2


def _cli(store_url: str, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = leases_cli(["--store-url", store_url, *args], out=out)
    return code, out.getvalue()


def test_the_command_lists_each_tables_queue_and_clears_only_what_is_stuck(tmp_path: Path) -> None:
    path = tmp_path / "leases.db"
    url = f"sqlite:///{path}"
    with SqliteLeaseStore(path) as store:
        first = grant(store, "s3a://lake/orders/", OpKind.MERGE, holder="ingest.merge_a/run1")
        second = grant(store, TABLE, OpKind.BLIND_APPEND, holder="ingest.append_b/run1")
        other = grant(store, "/lake/events", OpKind.OPTIMIZE, holder="maint.optimize/run1")
        stuck = grant(store, "/lake/events", OpKind.MERGE, holder="gone.task/run1", ttl_s=0.001)

    code, listed = _cli(url, "list")
    assert code == 0
    assert "s3://lake/orders: 2 live" in listed and "/lake/events: 1 live" in listed
    orders = listed[listed.index("s3://lake/orders") :]
    assert orders.index(f"1. {first.lease_id}") < orders.index(f"2. {second.lease_id}")
    assert stuck.lease_id not in listed  # it expired: no longer live
    assert _cli(url, "list", "--table", "s3a://lake/orders")[1].count("live") == 1

    code, refused = _cli(url, "clear", first.lease_id)
    assert code == 1 and "refused" in refused and "--force" in refused and "ingest.merge_a/run1" in refused
    code, cleared = _cli(url, "clear", stuck.lease_id)
    assert code == 0 and "it was expired" in cleared
    code, forced = _cli(url, "clear", other.lease_id, "--force")
    assert code == 0 and "live, forced" in forced
    assert _cli(url, "clear", "no-such-lease")[0] == 1
    with SqliteLeaseStore(path) as store:
        assert [lease.lease_id for lease in store.all_active()] == [first.lease_id, second.lease_id]

    code, purged = _cli(url, "purge", "--older-than-days", "0")
    assert code == 0 and "purged 2 leases" in purged
