"""``deltacc-leases``: see the live leases and each table's queue, clear a stuck lease, purge old ones.

    deltacc-leases list [--table TABLE]
    deltacc-leases clear LEASE_ID [--force]
    deltacc-leases purge [--older-than-days 7]

The store is ``--store-url``, else ``--conn-id`` (an Airflow connection, as ``[deltacc]
lease_store_conn_id`` names one), else ``[deltacc] lease_store_conn_id``, else ``$DELTACC_LEASE_STORE_URL``,
else the embedded SQLite file. A table's live leases are listed in the order they were granted: the order in
which its writers take their turns.

``clear`` ends a lease that its task can no longer end: a lease whose heartbeat stopped (it has expired) is
cleared at once; a live one only with ``--force``, since its task may still be writing, and the gate would
let OPTIMIZE or VACUUM run beside it. Exit status: 0 done, 1 refused or not found, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TextIO

from airflow_provider_deltacc.leases.factory import store_from_url
from airflow_provider_deltacc.leases.lease import Lease
from airflow_provider_deltacc.leases.partitions import format_scope
from airflow_provider_deltacc.leases.sql_store import SqlLeaseStore


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deltacc-leases", description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--store-url", help="the lease store URL (sqlite:///... or postgresql://...)")
    where.add_argument("--conn-id", help="the lease store's Airflow connection")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the live leases, per table in the order they were granted")
    listing.add_argument("--table", help="only this table (any spelling of it)")
    clear = commands.add_parser("clear", help="end a lease whose task can no longer end it")
    clear.add_argument("lease_id")
    clear.add_argument("--force", action="store_true", help="clear it although it is live")
    purge = commands.add_parser("purge", help="delete the leases that ended long ago")
    purge.add_argument("--older-than-days", type=float, default=7.0)
    return parser


def _store_url(args: argparse.Namespace) -> str | None:
    if args.store_url:
        return str(args.store_url)
    conn_id = args.conn_id
    if conn_id is None:
        from airflow_provider_deltacc.deployment.config import configured_lease_store_conn_id

        conn_id = configured_lease_store_conn_id()
    if conn_id is None:
        return None  # $DELTACC_LEASE_STORE_URL, else the embedded file
    from airflow_provider_deltacc.hooks.lease_store import connection_store_url

    return connection_store_url(conn_id, setting="--conn-id").render_as_string(hide_password=False)


def _age(now: datetime, then: datetime) -> str:
    return f"{(now - then).total_seconds():.0f} s"


def _row(position: int, lease: Lease, now: datetime) -> str:
    return (
        f"  {position}. {lease.lease_id}  {lease.op_kind.name} {format_scope(lease.partitions)}  "
        f"by {lease.holder}  granted {_age(now, lease.acquired_at)} ago, "
        f"heartbeat {_age(now, lease.heartbeat_at)} ago, expires in {_left(now, lease.expires_at)}"
    )


def _left(now: datetime, until: datetime) -> str:
    return f"{(until - now).total_seconds():.0f} s"


def list_leases(store: SqlLeaseStore, table: str | None, out: TextIO) -> int:
    now = store.now()
    found = store.active(table) if table else store.all_active()
    if not found:
        print(f"no live leases{f' on {table}' if table else ''}", file=out)
        return 0
    by_table: dict[str, list[Lease]] = {}
    for lease in found:
        by_table.setdefault(lease.table, []).append(lease)
    for name, live in by_table.items():
        print(f"{name}: {len(live)} live", file=out)
        for position, lease in enumerate(live, start=1):
            print(_row(position, lease, now), file=out)
    return 0


def clear_lease(store: SqlLeaseStore, lease_id: str, force: bool, out: TextIO) -> int:
    lease = store.get(lease_id)
    if lease is None:
        print(f"no lease {lease_id} in the store", file=out)
        return 1
    now = store.now()
    if lease.released_at is not None:
        print(f"lease {lease_id} ({lease.describe()} on {lease.table}) already ended", file=out)
        return 0
    if lease.is_active(now) and not force:
        print(
            f"refused: lease {lease_id} ({lease.describe()} on {lease.table}) is live: its heartbeat came "
            f"{_age(now, lease.heartbeat_at)} ago and it expires in {_left(now, lease.expires_at)}, "
            "so its task may still be writing. Clear it with --force only when that task is gone.",
            file=out,
        )
        return 1
    store.release(lease_id)
    state = "live, forced" if lease.is_active(now) else "expired"
    print(f"cleared lease {lease_id} ({lease.describe()} on {lease.table}; it was {state})", file=out)
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; return its exit status."""
    out = out or sys.stdout
    args = _parser().parse_args(argv)
    store = store_from_url(_store_url(args))
    try:
        if not isinstance(store, SqlLeaseStore):
            print(f"{store!r} is not a SQL lease store", file=out)
            return 2
        if args.command == "list":
            return list_leases(store, args.table, out)
        if args.command == "clear":
            return clear_lease(store, args.lease_id, args.force, out)
        purged = store.purge(timedelta(days=args.older_than_days))
        print(f"purged {purged} leases that ended more than {args.older_than_days:g} days ago", file=out)
        return 0
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
