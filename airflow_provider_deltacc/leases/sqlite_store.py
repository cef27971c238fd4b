"""The embedded lease store: one SQLite file, correct across processes on one machine, no server.

Every write step starts with ``BEGIN IMMEDIATE``, which takes SQLite's single write lock before reading,
so read-check-insert is serialized across all processes using the file. WAL lets readers run alongside
the writer. A busy timeout makes lock waits block rather than fail, and :meth:`SqlLeaseStore._run`
retries the rare ``SQLITE_BUSY`` that still escapes. The file must be on a local disk: SQLite locking
is unreliable on network file systems (use the PostgreSQL store across machines).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, create_engine, event
from sqlalchemy.exc import OperationalError

from airflow_provider_deltacc.leases.clock import Clock
from airflow_provider_deltacc.leases.sql_store import DEFAULT_HISTORY_RETENTION, WRITE_OPTION, SqlLeaseStore

#: Environment variable naming the SQLite lease file.
LEASE_DB_ENV = "DELTACC_LEASE_DB"

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def default_sqlite_path() -> Path:
    """``$DELTACC_LEASE_DB``, else ``~/.cache/airflow-provider-deltacc/leases.db``."""
    configured = os.environ.get(LEASE_DB_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "airflow-provider-deltacc" / "leases.db"


class SqliteLeaseStore(SqlLeaseStore):
    """A lease store in a SQLite file.

    :param path: the database file; created (with its folder) if absent. None for
        :func:`default_sqlite_path`.
    :param clock: the clock for lease times; None for this machine's UTC clock.
    :param busy_timeout_s: how long one statement waits for SQLite's lock before failing busy.
    :param retry_timeout_s: how long a step keeps retrying after busy failures.
    :param history_retention: how long leases that ended are kept (see
        :class:`~airflow_provider_deltacc.leases.sql_store.SqlLeaseStore`); None keeps them all.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        busy_timeout_s: float = 10.0,
        retry_timeout_s: float = 30.0,
        history_retention: timedelta | None = DEFAULT_HISTORY_RETENTION,
    ) -> None:
        self.path = Path(path).expanduser() if path is not None else default_sqlite_path()
        if str(self.path) in ("", ":memory:"):
            raise ValueError(
                f"path={str(path)!r}: an in-memory SQLite database is private to one connection; "
                "give a file path so every process sees the same leases"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            URL.create("sqlite+pysqlite", database=str(self.path)),
            connect_args={"timeout": busy_timeout_s, "check_same_thread": False},
        )
        event.listen(engine, "connect", _on_connect)
        event.listen(engine, "begin", _on_begin)
        super().__init__(
            engine, clock=clock, retry_timeout_s=retry_timeout_s, history_retention=history_retention
        )
        self.ensure_schema()

    def __repr__(self) -> str:
        return f"SqliteLeaseStore({str(self.path)!r})"

    def _serialize(self, conn: Connection, table: str | None) -> None:
        # BEGIN IMMEDIATE (see _on_begin) already holds the database-wide write lock.
        return None

    def _is_transient(self, exc: BaseException) -> bool:
        if not isinstance(exc, OperationalError):
            return False
        orig = exc.orig
        code = getattr(orig, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
        text = str(orig).lower()
        return "database is locked" in text or "database is busy" in text


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Stop the sqlite3 module from issuing its own deferred BEGIN; _on_begin issues the right one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
    finally:
        cursor.close()


def _on_begin(conn: Connection) -> None:
    write = conn.get_execution_options().get(WRITE_OPTION, True)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
