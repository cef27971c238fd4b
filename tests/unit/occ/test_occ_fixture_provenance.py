"""Every conflict-message fixture names its source: captured (how, when, with what) or synthesized (why)."""

from __future__ import annotations

import json

import pytest

from tests.unit.occ.recorded import (
    FIXTURES,
    FixtureFormatError,
    parse_fixture,
    provenance_problems,
    read_fixture,
)

pytestmark = pytest.mark.unit

FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob("*.txt"))

CAPTURED_HEADER = (
    "# provenance: captured\n"
    "# versions: pyspark 3.5.9, delta-spark 3.3.3, java 17.0.15\n"
    "# date: 2026-11-24\n"
    "# command: python3 scripts/capture_conflict_messages.py spark --pyspark 3.5 --delta 3.3 ...\n"
    "# scenario: MERGE held after reading its snapshot; an append commits meanwhile\n"
    "# exception: delta.exceptions.ConcurrentAppendException\n"
    "# ---\n"
)


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_fixture_names_its_source(name: str) -> None:
    assert provenance_problems(read_fixture(name)) == []


def test_every_fixture_is_a_case_and_every_case_a_fixture() -> None:
    listed = [case["file"] for case in json.loads((FIXTURES / "cases.json").read_text())]

    assert sorted(listed) == FIXTURE_FILES


def test_the_message_is_what_follows_the_header_byte_for_byte() -> None:
    message = "[DELTA_CONCURRENT_APPEND] Files were added.\n# not a header line\n\n"

    fixture = parse_fixture("x.txt", CAPTURED_HEADER + message)

    assert fixture.text == message
    assert fixture.header["provenance"] == "captured"
    assert fixture.header["exception"] == "delta.exceptions.ConcurrentAppendException"
    assert provenance_problems(fixture) == []


@pytest.mark.parametrize(
    "content",
    [
        "[DELTA_CONCURRENT_APPEND] a bare message\n",
        "# provenance: captured\n# date: 2026-11-24\n[DELTA_CONCURRENT_APPEND] no end of header\n",
        "# provenance: synthesized\nreason = not a header line\n# ---\nmessage",
    ],
    ids=["no-header", "unclosed-header", "malformed-line"],
)
def test_a_fixture_without_a_wellformed_header_is_refused(content: str) -> None:
    with pytest.raises(FixtureFormatError, match=r"x\.txt"):
        parse_fixture("x.txt", content)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("# provenance: synthesized\n# ---\nmessage", "'# reason:'"),
        ("# provenance: synthesized\n# reason: \n# ---\nmessage", "'# reason:'"),
        ("# provenance: recorded\n# ---\nmessage", "neither 'captured' nor 'synthesized'"),
        (
            CAPTURED_HEADER.replace("# versions: pyspark 3.5.9, delta-spark 3.3.3, java 17.0.15\n", "") + "m",
            "versions",
        ),
        (CAPTURED_HEADER.replace("2026-11-24", "yesterday") + "m", "YYYY-MM-DD"),
        (CAPTURED_HEADER.replace("scripts/capture_conflict_messages.py", "by hand") + "m", "does not run"),
        (CAPTURED_HEADER, "no message"),
    ],
    ids=[
        "synthesized-no-reason",
        "synthesized-empty-reason",
        "unknown",
        "no-versions",
        "bad-date",
        "not-the-script",
        "empty",
    ],
)
def test_a_fixture_missing_its_provenance_is_reported(content: str, problem: str) -> None:
    problems = provenance_problems(parse_fixture("x.txt", content))

    assert len(problems) == 1
    assert problem in problems[0]
