"""Recorded conflict messages (fixtures/*.txt) and what the classifier must find in each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def load_cases() -> list[dict[str, Any]]:
    """Every recorded message with what the classifier must find in it (``kind`` None = not a conflict)."""
    cases: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text())
    for case in cases:
        case["text"] = (FIXTURES / case["file"]).read_text()
    return cases


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()
