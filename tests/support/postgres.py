"""A throw-away PostgreSQL server for the test session (``scripts/postgres.sh``).

Register with ``pytest_plugins = ["tests.support.postgres"]``. Set ``DELTACC_TEST_POSTGRES_URL`` to use an
existing server instead (e.g. a CI service container); its database must be disposable.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "postgres.sh"
URL_ENV = "DELTACC_TEST_POSTGRES_URL"


def _script(command: str, directory: str, timeout_s: float) -> str:
    result = subprocess.run(
        [str(SCRIPT), command, directory], capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if result.returncode != 0:
        # stdout would hold the URL with its password; only stderr is shown.
        raise RuntimeError(f"scripts/postgres.sh {command} failed:\n{result.stderr.strip()}")
    return result.stdout.strip()


class PostgresServer:
    """A throw-away server in a directory of its own under /tmp (``scripts/postgres.sh``).

    :param directory: where its data, log, socket and password go; created if missing.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def start(self) -> str:
        """Start the server (installing PostgreSQL on a fresh machine, which can take minutes); its URL.
        After :meth:`halt` it comes back on the same port, so the URL stays the same."""
        return _script("start", self.directory, timeout_s=900)

    def halt(self) -> None:
        """Stop the server (``pg_ctl stop -m fast``: clients are disconnected) and keep its data."""
        _script("halt", self.directory, timeout_s=120)

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        _script("stop", self.directory, timeout_s=120)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[tuple[PostgresServer, str]]:
    """A new server for the block and its URL; stopped and deleted afterwards."""
    # Not under pytest's tmp_path: its parents are private to root, and the server runs as `postgres`.
    server = PostgresServer(tempfile.mkdtemp(prefix="deltacc-pg-", dir="/tmp"))
    try:
        yield server, server.start()
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The SQLAlchemy URL of a PostgreSQL server on 127.0.0.1, started (and installed) for this session."""
    existing = os.environ.get(URL_ENV)
    if existing:
        yield existing
        return
    with throwaway_postgres() as (_server, url):
        yield url


@contextlib.contextmanager
def scratch_database(server_url: str, prefix: str) -> Iterator[str]:
    """A new, empty database on the server of ``server_url``, dropped (with its connections) afterwards.

    :param server_url: the SQLAlchemy URL of any database on the server (e.g. ``postgres_url``).
    :param prefix: the start of the database's name, e.g. ``airflow``; a random suffix follows.
    :returns: the SQLAlchemy URL of the new database.
    """
    from sqlalchemy import create_engine, make_url, text

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def stoppable_postgres() -> Iterator[tuple[PostgresServer, str]]:
    """A server of the test's own and its URL, for tests that halt and restart it; removed afterwards."""
    with throwaway_postgres() as server_and_url:
        yield server_and_url


def airflow_connection(url: str) -> str:
    """A ``postgres`` Airflow connection (JSON, as ``AIRFLOW_CONN_*`` takes it) to the database of ``url``."""
    import json

    from sqlalchemy import make_url

    parsed = make_url(url)
    return json.dumps(
        {
            "conn_type": "postgres",
            "host": parsed.host,
            "port": parsed.port,
            "login": parsed.username,
            "password": parsed.password,
            "schema": parsed.database,
        }
    )
