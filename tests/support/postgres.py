"""A throw-away PostgreSQL server for the test session (``scripts/postgres.sh``).

Register with ``pytest_plugins = ["tests.support.postgres"]``. Set ``DELTACC_TEST_POSTGRES_URL`` to use an
existing server instead (e.g. a CI service container); its database must be disposable.
``stoppable_postgres`` is a server of the test's own that the test stops and starts again (same URL).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
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


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The SQLAlchemy URL of a PostgreSQL server on 127.0.0.1, started (and installed) for this session."""
    existing = os.environ.get(URL_ENV)
    if existing:
        yield existing
        return
    # Not under pytest's tmp_path: its parents are private to root, and the server runs as `postgres`.
    directory = tempfile.mkdtemp(prefix="deltacc-pg-", dir="/tmp")
    # Installing the Debian package on a fresh machine can take minutes.
    url = _script("start", directory, timeout_s=900)
    try:
        yield url
    finally:
        _script("stop", directory, timeout_s=120)


class PostgresServer:
    """A server of one test, in its own directory, that can be stopped and started again on the same port.

    :param directory: the server's directory (see ``scripts/postgres.sh``).
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.url = _script("start", directory, timeout_s=900)

    def stop(self) -> None:
        """Stop the server, keeping its data: connections to :attr:`url` are refused until :meth:`start`."""
        _script("halt", self.directory, timeout_s=120)

    def start(self) -> None:
        """Start the stopped server again, on the same port."""
        if _script("start", self.directory, timeout_s=120) != self.url:
            raise RuntimeError("the restarted PostgreSQL server has another URL")


@pytest.fixture
def stoppable_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server of the test's own, running; removed after the test."""
    server = PostgresServer(tempfile.mkdtemp(prefix="deltacc-pg-", dir="/tmp"))
    try:
        yield server
    finally:
        _script("stop", server.directory, timeout_s=120)
