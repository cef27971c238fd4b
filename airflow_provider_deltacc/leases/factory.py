"""Pick a lease store from a URL (SQLite for a file, PostgreSQL for a server), build that URL from the
fields of an Airflow connection (this package never imports Airflow: the Airflow face looks the connection
up), and say which URL a task would open and where it came from (:func:`store_url_and_source`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy import URL, make_url
from sqlalchemy.exc import ArgumentError

from airflow_provider_deltacc.leases.postgres_store import PostgresLeaseStore, mask_url
from airflow_provider_deltacc.leases.sqlite_store import SqliteLeaseStore, default_sqlite_path
from airflow_provider_deltacc.leases.store import LeaseStore

#: Environment variable with the lease store URL; unset means the SQLite file.
LEASE_STORE_URL_ENV = "DELTACC_LEASE_STORE_URL"
#: Where :func:`store_url_and_source` found the URL.
URL_ARGUMENT, URL_ENV, EMBEDDED_DEFAULT = "lease_store_url", f"${LEASE_STORE_URL_ENV}", "the embedded default"

_POSTGRES_DRIVERS = ("postgres", "postgresql")

#: Airflow connection types that name a lease store.
POSTGRES_CONN_TYPE = "postgres"
SQLITE_CONN_TYPE = "sqlite"
STORE_CONN_TYPES = (POSTGRES_CONN_TYPE, SQLITE_CONN_TYPE)
#: libpq parameters a ``postgres`` connection's extras may carry; the postgres provider's own extras
#: (``cursor``, ``iam``, ``sqlalchemy_scheme``, ...) mean nothing to the lease store.
_LIBPQ_EXTRAS = frozenset(
    {
        "sslmode",
        "sslcert",
        "sslkey",
        "sslrootcert",
        "sslcrl",
        "sslpassword",
        "application_name",
        "connect_timeout",
        "client_encoding",
        "options",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "target_session_attrs",
    }
)


def store_from_url(url: str | URL | None = None, **kwargs: Any) -> LeaseStore:
    """Open the lease store ``url`` names.

    - ``sqlite:////abs/path/leases.db`` (or a plain file path): :class:`SqliteLeaseStore`;
    - ``postgresql://``, ``postgres://``, ``postgresql+psycopg2://`` ...: :class:`PostgresLeaseStore`;
    - None: ``$DELTACC_LEASE_STORE_URL``, else the default SQLite file (``$DELTACC_LEASE_DB`` or
      ``~/.cache/airflow-provider-deltacc/leases.db``).

    :param url: the store URL (a string or a SQLAlchemy URL), or None for the environment / default.
    :param kwargs: passed to the store's constructor (e.g. ``clock``).
    :raises ValueError: for an unsupported scheme or an in-memory SQLite URL.
    """
    if url is None:
        url = os.environ.get(LEASE_STORE_URL_ENV) or None
    if url is None:
        return SqliteLeaseStore(**kwargs)
    if isinstance(url, str) and "://" not in url:
        return SqliteLeaseStore(url, **kwargs)
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(f"lease store URL {mask_url(url)} cannot be parsed: {exc}") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise ValueError(
                f"lease store URL {mask_url(parsed)} is an in-memory database, private to one connection; "
                "use a file, e.g. sqlite:////var/lib/airflow/deltacc-leases.db"
            )
        return SqliteLeaseStore(parsed.database, **kwargs)
    if backend in _POSTGRES_DRIVERS:
        return PostgresLeaseStore(parsed, **kwargs)
    raise ValueError(
        f"lease store URL {mask_url(parsed)} has the unsupported scheme {parsed.drivername!r}; "
        "use sqlite:///<file> or postgresql://user:password@host:port/database"
    )


def store_url_from_connection(
    conn_type: str | None,
    *,
    host: str | None,
    port: int | str | None = None,
    login: str | None = None,
    password: str | None = None,
    schema: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> URL:
    """The lease store URL an Airflow connection describes.

    - ``postgres``: host, port, login, password, and the database in ``schema`` (as Airflow's postgres
      connection has them); libpq extras such as ``sslmode`` become URL query parameters.
    - ``sqlite``: the host is the lease file's absolute path (as Airflow's sqlite connection has it).

    :param conn_type: the connection's type.
    :param host: the server, or the SQLite file.
    :param port: the server's port.
    :param login: the user.
    :param password: the password.
    :param schema: the PostgreSQL database.
    :param extra: the connection's extras.
    :raises ValueError: for another type, or fields the store cannot use; the message says what to set.
    """
    kind = (conn_type or "").strip().lower()
    if kind in _POSTGRES_DRIVERS:
        if not host:
            raise ValueError("a postgres connection needs the server in its host, e.g. postgres.internal")
        query = {
            key: str(value)
            for key, value in (extra or {}).items()
            if key in _LIBPQ_EXTRAS and value not in (None, "")
        }
        return URL.create(
            "postgresql+psycopg2",
            username=login or None,
            password=password or None,
            host=host,
            port=int(port) if port not in (None, "") else None,
            database=schema or None,
            query=query,
        )
    if kind == SQLITE_CONN_TYPE:
        if not host or not PurePosixPath(host).is_absolute():
            raise ValueError(
                f"a sqlite connection's host must be the lease file's absolute path (host={host!r}), e.g. "
                '{"conn_type": "sqlite", "host": "/var/lib/airflow/deltacc-leases.db"}'
            )
        return URL.create("sqlite", database=host)
    raise ValueError(
        f"a {conn_type!r} connection cannot hold leases; use a {POSTGRES_CONN_TYPE!r} connection (shared by "
        f"every worker) or a {SQLITE_CONN_TYPE!r} connection whose host is the lease file"
    )


def store_url_and_source(url: str | None = None) -> tuple[str, str]:
    """The lease store URL a task would open, and where it came from: ``url`` (:data:`URL_ARGUMENT`), else
    ``$DELTACC_LEASE_STORE_URL`` (:data:`URL_ENV`), else the default SQLite file as a ``sqlite:///`` URL
    (:data:`EMBEDDED_DEFAULT`).

    Resolve it in the worker before deferring, so the triggerer opens the same store whatever its own
    environment says.

    :param url: an explicit URL or None.
    """
    if url:
        return url, URL_ARGUMENT
    configured = os.environ.get(LEASE_STORE_URL_ENV)
    if configured:
        return configured, URL_ENV
    return f"sqlite:///{default_sqlite_path()}", EMBEDDED_DEFAULT
