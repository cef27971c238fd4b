"""The delta-rs fixtures are what the pinned deltalake raises today, and the classifier reads the real errors.

Each case runs one of ``scripts/capture_conflict_messages.py``'s delta-rs collisions (a stale snapshot
commits after a rival) with the deltalake this project locks, in a temporary directory, and checks the
raised ``CommitFailedError`` against the captured fixture byte for byte, then classifies the exception
object itself. A deltalake upgrade that changes a message fails here: re-run the capture script.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.occ import classify
from tests.unit.occ.recorded import FIXTURES, read_fixture

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "capture_conflict_messages.py"


def _capture_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("capture_conflict_messages", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


CAPTURE = _capture_script()
SCENARIOS = CAPTURE.rs_scenarios()
CASES = {case["file"]: case for case in json.loads((FIXTURES / "cases.json").read_text())}
CAPTURED = sorted(name for name in SCENARIOS if (FIXTURES / f"rs_{name}.txt").exists())


def test_every_captured_delta_rs_fixture_has_its_scenario() -> None:
    fixtures = {
        p.name.removeprefix("rs_").removesuffix(".txt")
        for p in FIXTURES.glob("rs_*.txt")
        if read_fixture(p.name).header["provenance"] == "captured"
    }

    assert fixtures == set(CAPTURED)


@pytest.mark.parametrize("name", CAPTURED)
def test_pinned_deltalake_raises_the_captured_message(name: str, tmp_path: Path) -> None:
    fixture = read_fixture(f"rs_{name}.txt")
    capture: Any = SCENARIOS[name](tmp_path)

    assert f"deltalake {metadata.version('deltalake')}," in fixture.header["versions"], "re-run the capture"
    assert capture.exception is not None, capture.scenario
    assert str(capture.exception) == fixture.text
    assert capture.winner == fixture.header["winner"]

    conflict = classify(capture.exception)

    assert conflict is not None
    assert conflict.kind is ConflictKind(CASES[f"rs_{name}.txt"]["kind"])
    assert conflict.source == "delta-rs"
    assert conflict.exception_type.endswith("CommitFailedError")


def test_two_appends_creating_one_table_both_commit_in_pinned_deltalake(tmp_path: Path) -> None:
    """Why rs_create_race_version_0.txt stays synthesized: this deltalake raises nothing for the race."""
    from deltalake import DeltaTable

    capture: Any = SCENARIOS["create_race"](tmp_path)

    assert capture.exception is None
    assert (
        "1.6.6 lets two appends racing to create a table both commit"
        in (read_fixture("rs_create_race_version_0.txt").header["reason"])
    )
    assert DeltaTable(str(tmp_path / "create_race")).version() == 1
