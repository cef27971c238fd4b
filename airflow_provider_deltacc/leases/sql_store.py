"""The lease store logic both SQL backends share; each backend supplies its serialization point."""

from __future__ import annotations

import abc
import logging
import os
import random
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import Connection, Engine, delete, insert, or_, select, update

from airflow_provider_deltacc.contract.exceptions import LeaseStoreUnavailable
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.leases.clock import Clock, require_aware, utc_now
from airflow_provider_deltacc.leases.lease import Lease, LeaseRequest
from airflow_provider_deltacc.leases.partitions import format_scope
from airflow_provider_deltacc.leases.sql_migrations import (
    CURRENT_VERSION,
    key_every_table,
    migrate,
    recorded_version,
)
from airflow_provider_deltacc.leases.sql_schema import lease_to_row, leases, metadata, row_to_lease
from airflow_provider_deltacc.leases.store import AcquireResult, ConflictPredicate, LeaseStore

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Execution option telling a backend whether the transaction writes (and must be serialized).
WRITE_OPTION = "deltacc_write"
#: How long a store keeps leases that ended, unless told otherwise.
DEFAULT_HISTORY_RETENTION = timedelta(days=7)
#: The shortest pause between two purges of one store by one process.
PURGE_INTERVAL_S = 600.0
#: When this process last purged each store (by the store's repr, which names its database).
_last_purge: dict[str, float] = {}


class SqlLeaseStore(LeaseStore):
    """A :class:`LeaseStore` on a SQLAlchemy engine.

    Every mutating step runs in :meth:`_run` with ``write=True``: the backend serializes it per table
    (:meth:`_serialize`) before anything is read, and the time used for expiry is read after the
    serialization point, so successive steps on a table see non-decreasing times.

    :param engine: the engine; the store owns it and disposes of it on :meth:`close`.
    :param clock: the clock for lease times; None for the backend's own (see :meth:`_db_now`).
    :param retry_timeout_s: how long to keep retrying a step that failed for a transient reason (lock
        contention) before giving up.
    :param history_retention: how long leases that ended are kept; older ones are purged right after a
        grant, at most every :data:`PURGE_INTERVAL_S` per process. None keeps them all.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        retry_timeout_s: float = 30.0,
        history_retention: timedelta | None = DEFAULT_HISTORY_RETENTION,
    ) -> None:
        self._engine = engine
        self._history_retention = history_retention
        self._clock = clock
        self._retry_timeout_s = retry_timeout_s
        self._pid = os.getpid()
        self._closed = False

    # -- backend hooks ---------------------------------------------------------------------------------

    @abc.abstractmethod
    def _serialize(self, conn: Connection, table: str | None) -> None:
        """Make this write transaction the only one on ``table`` (None: no per-table point needed).

        :param conn: the connection, inside its transaction.
        :param table: the Delta table the step works on.
        """

    @abc.abstractmethod
    def _is_transient(self, exc: BaseException) -> bool:
        """Whether ``exc`` left nothing behind and the step may simply run again.

        :param exc: the exception the step raised.
        """

    def _unavailable(self, exc: BaseException) -> LeaseStoreUnavailable | None:
        """``exc`` as :class:`LeaseStoreUnavailable` when it says the store cannot be reached, else None (the
        default: an embedded store has no connection to lose).

        :param exc: the exception a step raised.
        """
        return None

    def _db_now(self, conn: Connection) -> datetime:
        """The backend's notion of now; the default is this machine's clock.

        :param conn: the connection, inside its transaction.
        """
        return utc_now()

    # -- plumbing --------------------------------------------------------------------------------------

    def _connect(self) -> Connection:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed")
        if os.getpid() != self._pid:
            # A forked child must not share the parent's pooled connections (SQLAlchemy's recipe).
            self._engine.dispose(close=False)
            self._pid = os.getpid()
        return self._engine.connect()

    def _current_time(self, conn: Connection) -> datetime:
        if self._clock is not None:
            return require_aware(self._clock(), field="clock()")
        return self._db_now(conn)

    def _run(self, step: Callable[[Connection, datetime], T], *, table: str | None, write: bool) -> T:
        """Run ``step(conn, now)`` in one transaction, serialized per table when ``write``; retry transients.

        :param step: the work; it must not commit.
        :param table: the Delta table the step works on, for the per-table serialization point.
        :param write: True for a mutating step.
        :raises LeaseStoreUnavailable: when the store cannot be reached (see :meth:`_unavailable`).
        """
        deadline = time.monotonic() + self._retry_timeout_s
        delay = 0.005
        while True:
            try:
                with self._connect() as conn:
                    conn.execution_options(**{WRITE_OPTION: write})
                    with conn.begin():
                        if write:
                            self._serialize(conn, table)
                        return step(conn, self._current_time(conn))
            except Exception as exc:
                unavailable = self._unavailable(exc)
                if unavailable is not None:
                    raise unavailable from exc
                if not self._is_transient(exc) or time.monotonic() + delay > deadline:
                    raise
                log.debug("lease store busy (%s); retrying in %.3f s", type(exc).__name__, delay)
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 0.5)

    def ensure_schema(self) -> int:
        """Create the tables that do not exist and bring an older schema forward (see
        :mod:`~airflow_provider_deltacc.leases.sql_migrations`); safe to race from many processes.

        :returns: the schema version.
        """

        def create(conn: Connection, _now: datetime) -> None:
            metadata.create_all(conn, checkfirst=True)

        self._run(create, table=None, write=True)
        found = self._run(lambda conn, _now: recorded_version(conn), table=None, write=False)
        if found < CURRENT_VERSION:
            found = self._run(lambda conn, _now: migrate(conn), table=None, write=True)
        # Every open, not only once: during a rolling upgrade, workers still on an older provider keep
        # recording leases under their own spelling of a table.
        self._run(lambda conn, _now: key_every_table(conn), table=None, write=True)
        return found

    # -- LeaseStore ------------------------------------------------------------------------------------

    @staticmethod
    def _select_active(conn: Connection, table: str, now: datetime) -> list[Lease]:
        rows = conn.execute(
            select(leases)
            .where(leases.c.table_name == table, leases.c.released_at.is_(None), leases.c.expires_at > now)
            .order_by(leases.c.acquired_at, leases.c.lease_id)
        )
        return [row_to_lease(row) for row in rows]

    @staticmethod
    def _select_one(conn: Connection, lease_id: str) -> Lease | None:
        row = conn.execute(select(leases).where(leases.c.lease_id == lease_id)).first()
        return row_to_lease(row) if row is not None else None

    def try_acquire(self, request: LeaseRequest, conflicts: ConflictPredicate) -> AcquireResult:
        def step(conn: Connection, now: datetime) -> AcquireResult:
            blocking = [lease for lease in self._select_active(conn, request.table, now) if conflicts(lease)]
            if blocking:
                return AcquireResult(None, blocking)
            lease = Lease(
                lease_id=uuid.uuid4().hex,
                table=request.table,
                holder=request.holder,
                op_kind=request.op_kind,
                partitions=request.partitions,
                acquired_at=now,
                heartbeat_at=now,
                ttl_s=float(request.ttl_s),
            )
            conn.execute(insert(leases).values(lease_to_row(lease)))
            return AcquireResult(lease, [])

        result = self._run(step, table=request.table, write=True)
        if result.lease is not None:
            log.debug(
                "lease %s granted: %s %s on %s (ttl %.0f s)",
                result.lease.lease_id,
                request.op_kind.name,
                format_scope(request.partitions),
                request.table,
                request.ttl_s,
            )
            self._purge_now_and_then()
        return result

    def _purge_now_and_then(self) -> None:
        """Delete the leases that ended longer than the retention ago, at most every
        :data:`PURGE_INTERVAL_S` per process; a failure only costs the purge."""
        if self._history_retention is None:
            return
        store, now = repr(self), time.monotonic()
        last = _last_purge.get(store)
        if last is not None and now - last < PURGE_INTERVAL_S:
            return
        _last_purge[store] = now
        try:
            purged = self.purge(self._history_retention)
        except Exception as exc:
            log.debug("could not purge old leases from %r: %s", self, exc)
            return
        if purged:
            log.info(
                "purged %d leases that ended more than %s ago from %r", purged, self._history_retention, self
            )

    def _table_of(self, lease_id: str) -> str | None:
        # The table of a lease never changes, so it may be read outside the serialized step.
        lease = self.get(lease_id)
        return lease.table if lease is not None else None

    def heartbeat(self, lease_id: str) -> bool:
        table = self._table_of(lease_id)
        if table is None:
            return False

        def step(conn: Connection, now: datetime) -> bool:
            lease = self._select_one(conn, lease_id)
            if lease is None or not lease.is_active(now):
                return False
            conn.execute(
                update(leases)
                .where(leases.c.lease_id == lease_id)
                .values(heartbeat_at=now, expires_at=now + timedelta(seconds=lease.ttl_s))
            )
            return True

        return self._run(step, table=table, write=True)

    def release(self, lease_id: str) -> bool:
        table = self._table_of(lease_id)
        if table is None:
            return False

        def step(conn: Connection, now: datetime) -> bool:
            lease = self._select_one(conn, lease_id)
            if lease is None or lease.released_at is not None:
                return False
            conn.execute(update(leases).where(leases.c.lease_id == lease_id).values(released_at=now))
            return lease.is_active(now)

        return self._run(step, table=table, write=True)

    def active(self, table: str, now: datetime | None = None) -> list[Lease]:
        table = table_key(Table(table))

        def step(conn: Connection, store_now: datetime) -> list[Lease]:
            at = require_aware(now, field="now") if now is not None else store_now
            return self._select_active(conn, table, at)

        return self._run(step, table=table, write=False)

    def all_active(self) -> list[Lease]:
        """Every live lease on every table, by table, then in the order they were granted."""

        def step(conn: Connection, now: datetime) -> list[Lease]:
            rows = conn.execute(
                select(leases)
                .where(leases.c.released_at.is_(None), leases.c.expires_at > now)
                .order_by(leases.c.table_name, leases.c.acquired_at, leases.c.lease_id)
            )
            return [row_to_lease(row) for row in rows]

        return self._run(step, table=None, write=False)

    def history(self, table: str) -> list[Lease]:
        table = table_key(Table(table))

        def step(conn: Connection, _now: datetime) -> list[Lease]:
            rows = conn.execute(
                select(leases)
                .where(leases.c.table_name == table)
                .order_by(leases.c.acquired_at, leases.c.lease_id)
            )
            return [row_to_lease(row) for row in rows]

        return self._run(step, table=table, write=False)

    def get(self, lease_id: str) -> Lease | None:
        return self._run(lambda conn, _now: self._select_one(conn, lease_id), table=None, write=False)

    def purge(self, older_than: timedelta) -> int:
        if older_than < timedelta(0):
            raise ValueError(f"older_than={older_than} must not be negative, e.g. timedelta(days=30)")

        def step(conn: Connection, now: datetime) -> int:
            cutoff = now - older_than
            result = conn.execute(
                delete(leases).where(or_(leases.c.released_at < cutoff, leases.c.expires_at < cutoff))
            )
            return int(result.rowcount or 0)

        return self._run(step, table=None, write=True)

    def now(self) -> datetime:
        return self._run(lambda _conn, now: now, table=None, write=False)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._engine.dispose()
