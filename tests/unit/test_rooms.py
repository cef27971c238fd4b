"""Every module has a room named for its concept: the package root holds only the package itself, its public
exceptions and Airflow's provider entry point, and no module is kept at an old path to re-export the names
of one that moved: nothing was released, so nothing imports an old path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import airflow_provider_deltacc

pytestmark = pytest.mark.unit

PACKAGE = Path(airflow_provider_deltacc.__file__).parent
ROOT_MODULES = {"__init__", "exceptions", "get_provider_info"}
#: How a module kept at an old path said so.
_OLD_PATH = re.compile(r"Moved to|re-exports its names|at (its|their) older path|re-exported here")


def test_the_root_holds_only_the_package_its_exceptions_and_the_entry_point() -> None:
    assert {path.stem for path in PACKAGE.glob("*.py")} == ROOT_MODULES


def test_no_module_keeps_an_old_path() -> None:
    found = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if _OLD_PATH.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
