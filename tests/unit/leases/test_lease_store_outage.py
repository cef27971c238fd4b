"""A PostgreSQL lease store that cannot be reached raises LeaseStoreUnavailable, naming the store without
its password; a server that answers and refuses the configuration (password, database) keeps the driver's
error."""

from __future__ import annotations

import socket

import pytest
from sqlalchemy.exc import DBAPIError, OperationalError, ProgrammingError

from airflow_provider_deltacc.contract.exceptions import LeaseStoreUnavailable
from airflow_provider_deltacc.leases import PostgresLeaseStore, store_from_url
from airflow_provider_deltacc.leases.postgres_store import normalize_postgres_url

pytestmark = pytest.mark.unit

URL = "postgresql://deltacc:s3cret-pw@db.internal:5432/leases"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: connecting to it is refused


def test_a_refused_server_is_unavailable_and_named_without_its_password() -> None:
    port = _closed_port()
    with pytest.raises(LeaseStoreUnavailable) as raised:
        store_from_url(f"postgresql://deltacc:s3cret-pw@127.0.0.1:{port}/leases")
    error = raised.value
    assert error.store == f"postgresql+psycopg2://deltacc:***@127.0.0.1:{port}/leases"
    assert str(error).startswith(f"the lease store {error.store} cannot be reached (OperationalError: ")
    assert "Connection refused" in str(error) and "s3cret-pw" not in str(error)
    assert "\n" not in str(error)  # one line for the warning and the retry reason
    assert isinstance(error.__cause__, OperationalError)


class _DriverError(Exception):
    """Stands in for psycopg2's errors: a message and an optional SQLSTATE."""

    def __init__(self, message: str, pgcode: str | None = None) -> None:
        super().__init__(message)
        self.pgcode = pgcode


def _store() -> PostgresLeaseStore:
    store = PostgresLeaseStore.__new__(PostgresLeaseStore)  # no connection: only the classification runs
    store.url = normalize_postgres_url(URL)
    return store


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [
        (
            OperationalError("", {}, _DriverError('connection to server at "h" failed: Connection refused')),
            True,
        ),
        (OperationalError("", {}, _DriverError("server closed the connection unexpectedly")), True),
        (OperationalError("", {}, _DriverError("timeout expired")), True),
        (OperationalError("", {}, _DriverError('could not translate host name "db" to address')), True),
        (OperationalError("", {}, _DriverError("terminating connection", "57P01")), True),
        (OperationalError("", {}, _DriverError("the database system is starting up", "57P03")), True),
        (OperationalError("", {}, _DriverError("connection failure", "08006")), True),
        (DBAPIError("", {}, _DriverError("lost"), connection_invalidated=True), True),
        (OperationalError("", {}, _DriverError("FATAL: password authentication failed for user")), False),
        (OperationalError("", {}, _DriverError('FATAL: database "nodb" does not exist')), False),
        (OperationalError("", {}, _DriverError("canceling statement due to lock timeout", "55P03")), False),
        (ProgrammingError("", {}, _DriverError('relation "x" does not exist', "42P01")), False),
        (RuntimeError("not a database error"), False),
    ],
)
def test_which_errors_mean_the_store_cannot_be_reached(error: Exception, unavailable: bool) -> None:
    found = _store()._unavailable(error)
    assert (found is not None) is unavailable
    if found is not None:
        assert found.store == "postgresql+psycopg2://deltacc:***@db.internal:5432/leases"
        assert "s3cret-pw" not in str(found)
