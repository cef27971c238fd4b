"""The PostgreSQL lease store, for many Airflow workers on many machines.

Each write step takes a transaction-scoped advisory lock keyed by the Delta table's name before it
reads, so read-check-insert on one table is serialized across every worker while different tables
proceed in parallel. Lease times come from the server's clock, so workers with skewed clocks agree on
expiry. The lock is released by commit or rollback, and by the server if the worker's connection dies.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import URL, Connection, create_engine, func, literal, make_url, select
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from airflow_provider_deltacc.contract.exceptions import LeaseStoreUnavailable
from airflow_provider_deltacc.leases.clock import Clock
from airflow_provider_deltacc.leases.sql_store import DEFAULT_HISTORY_RETENTION, SqlLeaseStore

#: First key of every advisory lock this store takes, so it cannot collide with other applications'.
ADVISORY_NAMESPACE = 0x0DE17ACC
#: Second key for schema creation; a table whose hashtext is 0 merely shares it.
_SCHEMA_KEY = 0

#: lock_not_available (lock_timeout), serialization_failure, deadlock_detected: nothing was written.
_TRANSIENT_SQLSTATES = frozenset({"55P03", "40001", "40P01"})
#: admin_shutdown, crash_shutdown, cannot_connect_now: the server is going away or not up yet.
_SERVER_GONE_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
#: A failed connection attempt carries no SQLSTATE; these answers mean the server was reached and refused
#: this configuration (password, database, role, pg_hba.conf), which waiting does not mend.
_MISCONFIGURED = (
    "authentication failed",
    "does not exist",
    "pg_hba.conf",
    "permission denied",
    "no password",
)
#: Seconds a connection attempt may take (libpq's ``connect_timeout``) unless the URL sets its own: without
#: it a server that silently drops packets holds the task for minutes.
CONNECT_TIMEOUT_S = 10


def normalize_postgres_url(url: str | URL) -> URL:
    """Parse ``url``, mapping ``postgres://`` and plain ``postgresql://`` to the psycopg2 driver.

    :param url: a SQLAlchemy or libpq-style URL.
    """
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.drivername in ("postgres", "postgresql"):
        parsed = parsed.set(drivername="postgresql+psycopg2")
    return parsed


def mask_url(url: str | URL) -> str:
    """The URL with its password hidden, for messages and logs.

    :param url: a URL.
    """
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except Exception:
        return "<unparseable URL>"
    return parsed.render_as_string(hide_password=True)


class PostgresLeaseStore(SqlLeaseStore):
    """A lease store in a PostgreSQL database; creates its table if absent.

    :param url: a SQLAlchemy URL such as ``postgresql+psycopg2://user:pw@host:5432/db``.
    :param clock: the clock for lease times; None for the server's ``clock_timestamp()``.
    :param schema: the PostgreSQL schema for the lease table; None for the search path's default.
    :param lock_timeout_s: how long one step waits for the per-table lock before it is retried.
    :param retry_timeout_s: how long a step keeps retrying after lock timeouts.
    :param history_retention: how long leases that ended are kept (see
        :class:`~airflow_provider_deltacc.leases.sql_store.SqlLeaseStore`); None keeps them all.
    :param engine_kwargs: extra :func:`sqlalchemy.create_engine` arguments (pool sizes, connect_args).
    """

    def __init__(
        self,
        url: str | URL,
        *,
        clock: Clock | None = None,
        schema: str | None = None,
        lock_timeout_s: float = 10.0,
        retry_timeout_s: float = 30.0,
        engine_kwargs: dict[str, Any] | None = None,
        history_retention: timedelta | None = DEFAULT_HISTORY_RETENTION,
    ) -> None:
        self.url = normalize_postgres_url(url)
        self._lock_timeout_ms = max(1, int(lock_timeout_s * 1000))
        kwargs = dict(engine_kwargs or {})
        if "connect_timeout" not in self.url.query:
            connect_args = kwargs.get("connect_args") or {}
            kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S, **connect_args}
        try:
            engine = create_engine(self.url, pool_pre_ping=True, **kwargs)
        except ModuleNotFoundError as exc:
            raise ImportError(
                f"the PostgreSQL lease store at {mask_url(self.url)} needs a driver ({exc.name} is missing); "
                "install it with: pip install 'airflow-provider-deltacc[postgres]'"
            ) from exc
        if schema is not None:
            engine = engine.execution_options(schema_translate_map={None: schema})
        super().__init__(
            engine, clock=clock, retry_timeout_s=retry_timeout_s, history_retention=history_retention
        )
        self.ensure_schema()

    def __repr__(self) -> str:
        return f"PostgresLeaseStore({mask_url(self.url)!r})"

    def _serialize(self, conn: Connection, table: str | None) -> None:
        conn.execute(select(func.set_config("lock_timeout", f"{self._lock_timeout_ms}ms", True)))
        key = func.hashtext(table) if table is not None else literal(_SCHEMA_KEY)
        conn.execute(select(func.pg_advisory_xact_lock(literal(ADVISORY_NAMESPACE), key)))

    def _db_now(self, conn: Connection) -> datetime:
        value = conn.execute(select(func.clock_timestamp())).scalar_one()
        return value.astimezone(UTC) if isinstance(value, datetime) else datetime.fromisoformat(str(value))

    def _is_transient(self, exc: BaseException) -> bool:
        return isinstance(exc, DBAPIError) and getattr(exc.orig, "pgcode", None) in _TRANSIENT_SQLSTATES

    def _unavailable(self, exc: BaseException) -> LeaseStoreUnavailable | None:
        """A lost or refused connection, a server shutting down or starting up; not a wrong password or
        database name (those stay the driver's own error)."""
        if not isinstance(exc, DBAPIError):
            return None
        code = getattr(exc.orig, "pgcode", None)
        lost = exc.connection_invalidated or code in _SERVER_GONE_SQLSTATES
        lost = lost or str(code or "").startswith("08")  # connection_exception
        if not lost and isinstance(exc, OperationalError | InterfaceError) and code is None:
            text = str(exc.orig).lower()
            lost = not any(marker in text for marker in _MISCONFIGURED)
        return LeaseStoreUnavailable(mask_url(self.url), exc) if lost else None
