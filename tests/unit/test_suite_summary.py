"""The suite's closing lines (scripts/suite_summary.py): phases, modules, calibration, budget, and one
"N passed, N failed" line that counts failed tests, failed lint and missing reports."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import suite_summary

pytestmark = pytest.mark.unit

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.integration.test_a" name="test_fast" time="0.5"/>
<testcase classname="tests.integration.test_a" name="test_broken" time="2.0"><failure message="x"/></testcase>
<testcase classname="tests.integration.test_b.TestSlow" name="test_slow" time="93.25"/>
<testcase classname="tests.integration.test_b" name="test_error" time="1"><error message="y"/></testcase>
</testsuite></testsuites>
"""
CLEAN = REPORT.replace('<failure message="x"/>', "").replace('<error message="y"/>', "")


def _phases(**overrides: object) -> suite_summary.Phases:
    settings: dict[str, object] = {
        "setup_s": 60.0,
        "steps": {"integration-jvm": 754.0, "ruff": 3.0},
        "exit_codes": {"integration-jvm": 1, "ruff": 0},
        "lanes": {"JVM lane": 754.0, "light lane": 3.0},
        "calibration": {"python_loop_s": 0.36, "spark_start_s": 13.2},
    }
    settings.update(overrides)
    return suite_summary.Phases(**settings)  # type: ignore[arg-type]


def test_modules_add_up_their_tests_and_the_slowest_come_first(tmp_path: Path) -> None:
    report = tmp_path / "integration-jvm.xml"
    report.write_text(REPORT)
    totals = suite_summary.read_reports([report])
    lines = suite_summary.summary_lines(totals, _phases(), wall_s=754.0)
    assert (totals.passed, totals.failed) == (2, 2)
    assert "      1 min 34 s  tests.integration.test_b (2)" in lines  # a class's tests count in their module
    assert lines.index("      1 min 34 s  tests.integration.test_b (2)") < lines.index(
        "      0 min 02 s  tests.integration.test_a (2)"
    )
    assert "      1 min 00 s  set-up (install, jars, servers' packages)" in lines
    assert "     12 min 34 s    integration-jvm (FAILED, exit 1)" in lines
    assert "     93.2 s  tests.integration.test_b.TestSlow::test_slow" in lines
    assert "whole run, set-up included: 13 min 34 s (budget: 25 min on a quiet 2-core box)" in lines
    assert not any(line.startswith("OVER BUDGET") for line in lines)
    assert lines[-1] == "suite: 2 passed, 2 failed"


def test_the_calibration_reads_this_box_against_the_reference() -> None:
    line = suite_summary.calibration_line({"python_loop_s": 0.36, "spark_start_s": 13.2})
    assert line.endswith("this box is 2.00x the reference")
    assert "a fixed pure-Python loop 0.36 s (reference 0.18 s)" in line
    assert suite_summary.calibration_line({}) == "calibration: none measured"


def test_a_run_over_budget_says_so_with_its_five_slowest_modules(tmp_path: Path) -> None:
    report = tmp_path / "integration-jvm.xml"
    report.write_text(CLEAN)
    passed = _phases(exit_codes={"integration-jvm": 0, "ruff": 0})
    lines = suite_summary.summary_lines(suite_summary.read_reports([report]), passed, wall_s=25 * 60.0)
    over = next(i for i, line in enumerate(lines) if line.startswith("OVER BUDGET"))
    assert lines[over] == "OVER BUDGET by 1 min 00 s; the 5 slowest modules:"
    assert lines[over + 1 : over + 3] == [
        "      1 min 34 s  tests.integration.test_b",
        "      0 min 02 s  tests.integration.test_a",
    ]
    assert lines[-1] == "suite: 4 passed, 0 failed"


def test_failed_lint_a_step_that_failed_without_a_failed_test_and_a_missing_report_each_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean = tmp_path / "unit.xml"
    clean.write_text(CLEAN)
    codes = {"ruff": 0, "mypy": 1, "unit": 5, "integration-jvm": 1}
    phases = _phases(exit_codes=codes, steps=dict.fromkeys(codes, 1.0))
    status = suite_summary.report([clean, tmp_path / "integration-jvm.xml"], phases, suite_started=0.0)
    closing = capsys.readouterr().out.splitlines()[-1]
    # mypy failed, unit exited 5 with nothing failed in its report, integration-jvm left no report.
    assert (status, closing) == (1, "suite: 4 passed, 3 failed")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.4, "0 min 00 s"),
        (59.4, "0 min 59 s"),
        (59.6, "1 min 00 s"),
        (1559.7, "26 min 00 s"),
        (754.0, "12 min 34 s"),
    ],
)
def test_a_duration_rounds_to_the_second_before_it_is_split(seconds: float, shown: str) -> None:
    assert suite_summary.minutes(seconds) == shown


def test_each_failed_test_is_named_with_where_and_why_it_failed_before_the_closing_lines(
    tmp_path: Path,
) -> None:
    traceback = (
        "def test_x():\n&gt;       helper()\n\ntests/integration/test_a.py:12: \n"
        "_ _ _\n    assert outside == []\nE   AssertionError: ([(7, 'late')], [])\n\n"
        "tests/integration/test_a.py:40: AssertionError"
    )
    failed = REPORT.replace(
        '<failure message="x"/>',
        f"<failure message=\"AssertionError: ([(7, 'late')],&#10; [])\">{traceback}</failure>",
    ).replace('<error message="y"/>', f'<error message="{"long " * 200}"/>')
    report = tmp_path / "integration-jvm.xml"
    report.write_text(failed)
    lines = suite_summary.summary_lines(suite_summary.read_reports([report]), _phases(), wall_s=60.0)
    start = lines.index("failed tests, where and why:")
    assert lines[start + 1] == (
        "  tests.integration.test_a::test_broken: tests/integration/test_a.py:40: "
        "AssertionError: ([(7, 'late')], [])"
    )
    name = "  tests.integration.test_b::test_error: "
    assert lines[start + 2].startswith(f"{name}long long") and lines[start + 2].endswith("long…")
    assert len(lines[start + 2]) == len(name) + suite_summary.FAILURE_CHARS
    assert start < next(i for i, line in enumerate(lines) if line.startswith("whole run"))
    assert lines[-1] == "suite: 2 passed, 2 failed"
