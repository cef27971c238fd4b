"""Lease-store fixtures for both backends: a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A lease store URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'leases.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url
