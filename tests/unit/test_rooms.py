"""Every module has a room named for its concept: the package root holds only the package itself, its public
exceptions and Airflow's provider entry point. Nothing was released, so no module is kept at an old path."""

from __future__ import annotations

from pathlib import Path

import pytest

import airflow_provider_deltacc

pytestmark = pytest.mark.unit

PACKAGE = Path(airflow_provider_deltacc.__file__).parent
ROOT_MODULES = {"__init__", "exceptions", "get_provider_info"}


def test_the_root_holds_only_the_package_its_exceptions_and_the_entry_point() -> None:
    assert {path.stem for path in PACKAGE.glob("*.py")} == ROOT_MODULES
