"""Recorded conflict messages (fixtures/*.txt) and what the classifier must find in each.

Every fixture file starts with a provenance header, ``# key: value`` lines closed by ``# ---``; the
message follows, exactly as it was raised. ``provenance`` is ``captured`` (by
``scripts/capture_conflict_messages.py``, which also writes the versions, date, command, scenario and
exception class) or ``synthesized`` (written by hand, with the ``reason`` no run here produces it).
See fixtures/README.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
HEADER_END = "# ---"
CAPTURE_SCRIPT = "scripts/capture_conflict_messages.py"

#: The header keys each kind of provenance must state (non-empty).
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "captured": ("versions", "date", "command", "scenario", "exception"),
    "synthesized": ("reason",),
}

_HEADER_LINE = re.compile(r"# (?P<key>[a-z][a-z ]*[a-z]): (?P<value>.*)")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class FixtureFormatError(ValueError):
    """A fixture file without a well-formed provenance header."""


@dataclass(frozen=True)
class Fixture:
    """One fixture file: its provenance header and the message after it."""

    name: str
    header: dict[str, str]
    text: str


def parse_fixture(name: str, content: str) -> Fixture:
    """Split a fixture file into its header and its message.

    :param name: the file name, for error messages.
    :param content: the whole file.
    :raises FixtureFormatError: when the file does not open with a ``# provenance:`` header closed by
        ``# ---``, or a header line is not ``# key: value``.
    """
    if not content.startswith("# provenance: "):
        raise FixtureFormatError(f"{name}: the file must start with a '# provenance: ...' header line")
    head, separator, text = content.partition("\n" + HEADER_END + "\n")
    if not separator:
        raise FixtureFormatError(f"{name}: the provenance header is not closed by a '{HEADER_END}' line")
    header: dict[str, str] = {}
    for line in head.splitlines():
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            raise FixtureFormatError(f"{name}: header line {line!r} is not '# key: value'")
        header[match["key"]] = match["value"].strip()
    return Fixture(name=name, header=header, text=text)


def provenance_problems(fixture: Fixture) -> list[str]:
    """What a fixture's header lacks: an unknown provenance, a missing key, a malformed date or command."""
    provenance = fixture.header.get("provenance", "")
    required = REQUIRED_KEYS.get(provenance)
    if required is None:
        return [f"{fixture.name}: provenance {provenance!r} is neither 'captured' nor 'synthesized'"]
    problems = [
        f"{fixture.name}: a {provenance} fixture needs a non-empty '# {key}:' line"
        for key in required
        if not fixture.header.get(key)
    ]
    if provenance == "captured":
        if fixture.header.get("date") and not _DATE.fullmatch(fixture.header["date"]):
            problems.append(f"{fixture.name}: date {fixture.header['date']!r} is not YYYY-MM-DD")
        if fixture.header.get("command") and CAPTURE_SCRIPT not in fixture.header["command"]:
            problems.append(f"{fixture.name}: the command does not run {CAPTURE_SCRIPT}")
    if not fixture.text:
        problems.append(f"{fixture.name}: no message after the header")
    return problems


def read_fixture(name: str) -> Fixture:
    return parse_fixture(name, (FIXTURES / name).read_text())


def fixture_text(name: str) -> str:
    """The message in a fixture file, without its provenance header."""
    return read_fixture(name).text


def load_cases() -> list[dict[str, Any]]:
    """Every recorded message with what the classifier must find in it (``kind`` None = not a conflict)."""
    cases: list[dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text())
    for case in cases:
        case["text"] = fixture_text(case["file"])
    return cases
