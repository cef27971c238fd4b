"""The ``[deltacc]`` config section: declared in provider info as Airflow's schema wants it, and read with the
documented defaults and overrides."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import airflow
import jsonschema
import pytest

from airflow_provider_deltacc.deployment.config import (
    configured_lease_history,
    configured_lease_store_conn_id,
    configured_report_dir,
    default_deferrable,
    unshared_lease_store_allowed,
)
from airflow_provider_deltacc.get_provider_info import get_provider_info

pytestmark = pytest.mark.unit


def test_provider_info_with_its_config_section_matches_airflows_schema() -> None:
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    options = info["config"]["deltacc"]["options"]
    assert {name: (option["type"], option["default"]) for name, option in options.items()} == {
        "lease_store_conn_id": ("string", ""),
        "default_deferrable": ("boolean", None),
        "allow_unshared_lease_store": ("boolean", "False"),
        "report_dir": ("string", ""),
        "lease_history_days": ("integer", "7"),
    }
    assert all(option["description"] and option["version_added"] for option in options.values())


@pytest.fixture
def clean_config(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "AIRFLOW__DELTACC__LEASE_STORE_CONN_ID",
        "AIRFLOW__DELTACC__DEFAULT_DEFERRABLE",
        "AIRFLOW__DELTACC__ALLOW_UNSHARED_LEASE_STORE",
        "AIRFLOW__DELTACC__REPORT_DIR",
        "AIRFLOW__DELTACC__LEASE_HISTORY_DAYS",
        "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_defaults(clean_config: pytest.MonkeyPatch) -> None:
    assert configured_lease_store_conn_id() is None
    assert default_deferrable() is False
    assert unshared_lease_store_allowed() is False
    assert configured_report_dir() is None
    assert configured_lease_history() == timedelta(days=7)


def test_lease_history_days_and_zero_keeps_everything(clean_config: pytest.MonkeyPatch) -> None:
    clean_config.setenv("AIRFLOW__DELTACC__LEASE_HISTORY_DAYS", "30")
    assert configured_lease_history() == timedelta(days=30)
    clean_config.setenv("AIRFLOW__DELTACC__LEASE_HISTORY_DAYS", "0")
    assert configured_lease_history() is None


def test_lease_store_conn_id_is_read_and_blank_means_unset(clean_config: pytest.MonkeyPatch) -> None:
    clean_config.setenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", " deltacc_leases ")
    assert configured_lease_store_conn_id() == "deltacc_leases"
    clean_config.setenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", "  ")
    assert configured_lease_store_conn_id() is None


@pytest.mark.parametrize(
    ("operators", "deltacc", "expected"),
    [
        ("True", None, True),  # follows [operators] default_deferrable, as Airflow's own providers do
        ("False", None, False),
        ("True", "False", False),  # [deltacc] default_deferrable overrides it
        ("False", "true", True),
        (None, "True", True),
    ],
)
def test_default_deferrable_follows_operators_unless_set(
    clean_config: pytest.MonkeyPatch, operators: str | None, deltacc: str | None, expected: bool
) -> None:
    if operators is not None:
        clean_config.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", operators)
    if deltacc is not None:
        clean_config.setenv("AIRFLOW__DELTACC__DEFAULT_DEFERRABLE", deltacc)
    assert default_deferrable() is expected


def test_opt_out_is_read(clean_config: pytest.MonkeyPatch) -> None:
    clean_config.setenv("AIRFLOW__DELTACC__ALLOW_UNSHARED_LEASE_STORE", "True")
    assert unshared_lease_store_allowed() is True
