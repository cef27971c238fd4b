"""The live leases on the table in grant order, each with the writers it takes its turn after, and reading
them from the configured lease store (an error on the view, never an exception; its secrets hidden).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow_provider_deltacc.contract.op_kinds import MAINTENANCE_KINDS
from airflow_provider_deltacc.contract.redaction import redact_text
from airflow_provider_deltacc.leases.conflicts import writer_turn_conflicts
from airflow_provider_deltacc.leases.lease import Lease
from airflow_provider_deltacc.leases.partitions import format_scope
from airflow_provider_deltacc.turns.lease_turns import FIRST_LEVELS
from airflow_provider_deltacc.ui.fighting.redaction import redacted


@dataclass(frozen=True)
class LeaseRow:
    """A live lease, in grant order.

    :param position: its place in the table's grant order (1: granted first).
    :param lease_id: its id.
    :param operation: the holder's operation.
    :param scope: its partitions, or ``the whole table``.
    :param holder: who holds it (``dag.task[map]/run``).
    :param granted_s: seconds since it was granted.
    :param heartbeat_s: seconds since its last heartbeat.
    :param expires_in_s: seconds until it expires without a heartbeat.
    :param behind: the positions of the writers granted before it that it will conflict with: it takes its
        turn after them (empty for maintenance, which is granted only when nothing it conflicts with is live).
    """

    position: int
    lease_id: str
    operation: str
    scope: str
    holder: str
    granted_s: float
    heartbeat_s: float
    expires_in_s: float
    behind: tuple[int, ...] = ()


def lease_rows(leases: Sequence[Lease], now: datetime) -> list[LeaseRow]:
    """The live leases of one table in grant order, each with the writers it waits behind (by the conflict
    matrix with its default engine profile and table traits, as a writer's turn is decided by default).

    :param leases: the table's live leases.
    :param now: the store's current time.
    """
    ordered = sorted(leases, key=lambda lease: (lease.acquired_at, lease.lease_id))
    rows = []
    for position, lease in enumerate(ordered, start=1):
        behind: tuple[int, ...] = ()
        if lease.op_kind not in MAINTENANCE_KINDS:
            conflicts = writer_turn_conflicts(lease.op_kind, lease.partitions, levels=FIRST_LEVELS)
            behind = tuple(
                i for i, earlier in enumerate(ordered[: position - 1], start=1) if conflicts(earlier)
            )
        rows.append(
            LeaseRow(
                position,
                lease.lease_id,
                lease.op_kind.name,
                format_scope(lease.partitions),
                lease.holder,
                (now - lease.acquired_at).total_seconds(),
                (now - lease.heartbeat_at).total_seconds(),
                (lease.expires_at - now).total_seconds(),
                behind,
            )
        )
    return rows


@dataclass(frozen=True)
class LeaseView:
    """The live leases of the table, or why they cannot be shown.

    :param rows: the leases in grant order.
    :param store: which store was read (its password hidden).
    :param error: why the store could not be read, else None.
    """

    rows: tuple[LeaseRow, ...] = ()
    store: str = ""
    error: str | None = None


def _sqlite_file(url: Any) -> Path | None:
    """The SQLite file a lease store URL names (None: the default file), None for another store."""
    from sqlalchemy import make_url

    from airflow_provider_deltacc.leases.sqlite_store import default_sqlite_path

    if url is None:
        return default_sqlite_path()
    if isinstance(url, str) and "://" not in url:
        return Path(url).expanduser()
    parsed = make_url(url)
    return Path(parsed.database or "") if parsed.get_backend_name() == "sqlite" else None


def _lease_store_target() -> tuple[Any, list[str]]:
    """The lease store URL as ``deltacc-leases`` resolves it without arguments (``[deltacc]
    lease_store_conn_id``, else ``$DELTACC_LEASE_STORE_URL``; None: the embedded SQLite file), and its
    secrets."""
    import os

    from sqlalchemy import make_url

    from airflow_provider_deltacc.deployment.config import configured_lease_store_conn_id
    from airflow_provider_deltacc.leases.factory import LEASE_STORE_URL_ENV

    conn_id = configured_lease_store_conn_id()
    if conn_id is not None:
        from airflow_provider_deltacc.hooks.lease_store import connection_store_url

        url = connection_store_url(conn_id)
        return url, [url.password] if isinstance(url.password, str) else []
    text = os.environ.get(LEASE_STORE_URL_ENV) or None
    try:
        password = make_url(text).password if text and "://" in text else None
    except Exception:
        password = None
    return text, [password] if isinstance(password, str) else []


def read_leases(key: str) -> LeaseView:
    """The live leases on the table ``key`` from the configured lease store; an error on the view, never an
    exception, when the store cannot be opened or read. An embedded SQLite file that does not exist is not
    created.

    :param key: the table's key.
    """
    from airflow_provider_deltacc.leases.factory import store_from_url
    from airflow_provider_deltacc.leases.sql_store import SqlLeaseStore

    secrets: list[str] = []
    try:
        url, secrets = _lease_store_target()
        sqlite = _sqlite_file(url)
        if sqlite is not None and not sqlite.is_file():
            where = f"the SQLite lease file {sqlite}"
            return LeaseView(store=where, error=f"{where} does not exist on this machine (the api-server's)")
        store = store_from_url(url, retry_timeout_s=5.0)
    except Exception as exc:
        return LeaseView(error=f"the lease store cannot be opened: {redacted(exc, secrets)}")
    try:
        if not isinstance(store, SqlLeaseStore):
            return LeaseView(store=repr(store), error=f"{store!r} is not a SQL lease store")
        rows = lease_rows(store.active(key), store.now())
        return LeaseView(tuple(rows), redact_text(repr(store), secrets))
    except Exception as exc:
        return LeaseView(
            store=redact_text(repr(store), secrets), error=f"cannot read: {redacted(exc, secrets)}"
        )
    finally:
        store.close()
