"""store_from_url, URLs from Airflow connections' fields, the default SQLite location, password masking, and
the package's import rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_deltacc.leases import (
    SqliteLeaseStore,
    default_sqlite_path,
    mask_url,
    store_from_url,
    store_url_and_source,
    store_url_from_connection,
)

pytestmark = pytest.mark.unit


def test_default_is_the_sqlite_file_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DELTACC_LEASE_STORE_URL", raising=False)
    monkeypatch.setenv("DELTACC_LEASE_DB", str(tmp_path / "nested" / "leases.db"))
    with store_from_url() as store:
        assert isinstance(store, SqliteLeaseStore)
        assert store.path == tmp_path / "nested" / "leases.db"
    assert (tmp_path / "nested" / "leases.db").exists()


def test_default_path_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DELTACC_LEASE_DB", raising=False)
    assert default_sqlite_path() == Path.home() / ".cache" / "airflow-provider-deltacc" / "leases.db"


def test_url_from_the_environment_and_plain_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{tmp_path}/env.db")
    with store_from_url() as store:
        assert isinstance(store, SqliteLeaseStore) and store.path == tmp_path / "env.db"
    with store_from_url(str(tmp_path / "plain.db")) as store:
        assert isinstance(store, SqliteLeaseStore) and store.path == tmp_path / "plain.db"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite://", "is an in-memory database, private to one connection; use a file"),
        ("sqlite:///:memory:", "is an in-memory database"),
        (
            "mysql://airflow:s3cret@db:3306/airflow",
            "has the unsupported scheme 'mysql'; use sqlite:///<file> or",
        ),
    ],
)
def test_unsupported_urls_are_refused_without_leaking_passwords(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as raised:
        store_from_url(url)
    assert "s3cret" not in str(raised.value)


def test_mask_url_hides_the_password() -> None:
    assert (
        mask_url("postgresql://airflow:s3cret@db:5432/airflow") == "postgresql://airflow:***@db:5432/airflow"
    )


@pytest.mark.parametrize("room", ["leases", "gate", "turns"])
def test_the_room_imports_neither_airflow_nor_pyspark(room: str) -> None:
    code = (
        f"import sys, airflow_provider_deltacc.{room}; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'pyspark')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_postgres_connection_becomes_a_psycopg2_url() -> None:
    url = store_url_from_connection(
        "postgres",
        host="db.internal",
        port=5433,
        login="airflow",
        password="s3cret/with@signs",
        schema="leases",
        extra={"sslmode": "require", "application_name": "deltacc", "cursor": "dictcursor", "iam": True},
    )
    assert url.drivername == "postgresql+psycopg2"
    assert (url.host, url.port, url.username, url.password, url.database) == (
        "db.internal",
        5433,
        "airflow",
        "s3cret/with@signs",
        "leases",
    )
    # libpq parameters pass through; the postgres provider's own extras do not reach the driver.
    assert dict(url.query) == {"sslmode": "require", "application_name": "deltacc"}
    assert (
        mask_url(url)
        == "postgresql+psycopg2://airflow:***@db.internal:5433/leases?application_name=deltacc&sslmode=require"
    )


def test_a_postgres_connection_needs_only_a_host() -> None:
    url = store_url_from_connection("postgresql", host="db", port="", login="", password=None, schema="")
    assert url.render_as_string(hide_password=False) == "postgresql+psycopg2://db"


def test_a_sqlite_connection_is_its_host_file(tmp_path: Path) -> None:
    url = store_url_from_connection("sqlite", host=str(tmp_path / "leases.db"))
    with store_from_url(url) as store:
        assert isinstance(store, SqliteLeaseStore) and store.path == tmp_path / "leases.db"


@pytest.mark.parametrize(
    ("conn_type", "host", "message"),
    [
        ("mysql", "db", "a 'mysql' connection cannot hold leases; use a 'postgres' connection"),
        ("spark", "local[2]", "a 'spark' connection cannot hold leases"),
        ("postgres", None, "a postgres connection needs the server in its host"),
        ("sqlite", None, "a sqlite connection's host must be the lease file's absolute path (host=None)"),
        ("sqlite", "leases.db", 'absolute path (host=\'leases.db\'), e.g. {"conn_type": "sqlite"'),
    ],
)
def test_connections_that_cannot_hold_leases_say_what_to_set(
    conn_type: str, host: str | None, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        store_url_from_connection(conn_type, host=host, password="s3cret")
    assert message in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_where_the_url_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTACC_LEASE_DB", str(tmp_path / "default.db"))
    monkeypatch.delenv("DELTACC_LEASE_STORE_URL", raising=False)
    assert store_url_and_source(None) == (f"sqlite:///{tmp_path / 'default.db'}", "the embedded default")
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", "postgresql://u:p@h/db")
    assert store_url_and_source(None) == ("postgresql://u:p@h/db", "$DELTACC_LEASE_STORE_URL")
    assert store_url_and_source("sqlite:////x.db") == ("sqlite:////x.db", "lease_store_url")
