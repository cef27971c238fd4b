"""Pick a lease store from a URL: SQLite for a file, PostgreSQL for a server."""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from airflow_provider_deltacc.windows.postgres_store import PostgresLeaseStore, mask_url
from airflow_provider_deltacc.windows.sqlite_store import SqliteLeaseStore
from airflow_provider_deltacc.windows.store import LeaseStore

#: Environment variable with the lease store URL; unset means the SQLite file.
LEASE_STORE_URL_ENV = "DELTACC_LEASE_STORE_URL"

_POSTGRES_DRIVERS = ("postgres", "postgresql")


def store_from_url(url: str | None = None, **kwargs: Any) -> LeaseStore:
    """Open the lease store ``url`` names.

    - ``sqlite:////abs/path/leases.db`` (or a plain file path): :class:`SqliteLeaseStore`;
    - ``postgresql://``, ``postgres://``, ``postgresql+psycopg2://`` ...: :class:`PostgresLeaseStore`;
    - None: ``$DELTACC_LEASE_STORE_URL``, else the default SQLite file (``$DELTACC_LEASE_DB`` or
      ``~/.cache/airflow-provider-deltacc/leases.db``).

    :param url: the store URL, or None for the environment / default.
    :param kwargs: passed to the store's constructor (e.g. ``clock``).
    :raises ValueError: for an unsupported scheme or an in-memory SQLite URL.
    """
    if url is None:
        url = os.environ.get(LEASE_STORE_URL_ENV) or None
    if url is None:
        return SqliteLeaseStore(**kwargs)
    if "://" not in url:
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
