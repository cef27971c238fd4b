"""store_from_url, the default SQLite location, password masking, and the package's import rules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_deltacc.windows import SqliteLeaseStore, default_sqlite_path, mask_url, store_from_url

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


def test_windows_imports_neither_airflow_nor_pyspark() -> None:
    code = (
        "import sys, airflow_provider_deltacc.windows as w; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('airflow', 'pyspark')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
