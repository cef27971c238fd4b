"""The suite's closing lines (scripts/suite_summary.py) add up the sessions' JUnit reports."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import suite_summary

pytestmark = pytest.mark.unit

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.unit.test_a" name="test_fast" time="0.5"/>
<testcase classname="tests.unit.test_a" name="test_broken" time="2.0"><failure message="x"/></testcase>
<testcase classname="tests.integration.test_b" name="test_slow" time="93.25"/>
<testcase classname="tests.integration.test_b" name="test_error" time="1"><error message="y"/></testcase>
</testsuite></testsuites>
"""


def test_the_sessions_add_up_and_the_slowest_come_first(tmp_path: Path) -> None:
    report = tmp_path / "unit.xml"
    report.write_text(REPORT)
    totals = suite_summary.read_reports([report])
    lines = suite_summary.summary_lines(totals, wall_s=754.0, run_s=900.0)
    assert (totals.passed, totals.failed) == (2, 2)
    assert lines[1] == "     93.2 s  tests.integration.test_b::test_slow"
    assert "suite wall time: 12 min 34 s (budget: 25 min on a quiet 2-core box)" in lines
    assert "whole run, set-up and lint included: 15 min 00 s" in lines
    assert lines[-1] == "suite: 2 passed, 2 failed"


def test_a_session_without_a_report_fails_the_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "unit.xml"
    report.write_text(REPORT.replace('<failure message="x"/>', "").replace('<error message="y"/>', ""))
    status = suite_summary.main(["--started", "0", str(report), str(tmp_path / "integration.xml")])
    closing = capsys.readouterr().out.splitlines()[-1]
    assert (status, closing) == (1, "suite: 4 passed, 1 failed")
