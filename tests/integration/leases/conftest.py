"""Lease-store fixtures for both backends: a SQLite file and a real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_deltacc.leases import LeaseStore, store_from_url
from tests.unit.leases.helpers import FakeClock


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A lease store URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'leases.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def clock() -> FakeClock:
    """A store clock the test moves by hand."""
    return FakeClock()


@pytest.fixture
def store(store_url: str, clock: FakeClock) -> Iterator[LeaseStore]:
    """The lease store ``store_url`` names, on the test's clock."""
    with store_from_url(store_url, clock=clock) as opened:
        yield opened
