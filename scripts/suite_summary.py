"""The closing lines of a `make test` run made of several pytest sessions: the suite's wall time, its ten
slowest tests across every session, and one "N passed, N failed" line for the whole suite.

``python scripts/suite_summary.py --started EPOCH_SECONDS report.xml [report.xml ...]`` reads the JUnit XML
reports the sessions wrote (``pytest --junitxml``). A report that is missing counts as a failed session.
When ``DELTACC_RUN_STARTED`` (epoch seconds, set by ``.ci/run``) is set, the whole run's time, set-up and
lint included, is printed too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

SLOWEST = 10
#: Minutes the suite may take on a 2-core box with nothing else running (CI's whole run stays under 40).
BUDGET_MIN = 25


@dataclass
class Totals:
    """What the sessions' reports add up to."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    missing: list[str] = field(default_factory=list)
    durations: list[tuple[float, str]] = field(default_factory=list)


def read_reports(paths: list[Path]) -> Totals:
    """Counts and per-test durations (setup, call and teardown together, as JUnit XML records them)."""
    totals = Totals()
    for path in paths:
        if not path.exists():
            totals.missing.append(str(path))
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            totals.durations.append((float(case.get("time", "0") or 0), name))
            if case.find("failure") is not None or case.find("error") is not None:
                totals.failed += 1
            elif case.find("skipped") is not None:
                totals.skipped += 1
            else:
                totals.passed += 1
    return totals


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def summary_lines(totals: Totals, wall_s: float, run_s: float | None = None) -> list[str]:
    """The closing lines; the last is the suite's "N passed, N failed" line."""
    lines = [f"{SLOWEST} slowest tests:"]
    for seconds, name in sorted(totals.durations, reverse=True)[:SLOWEST]:
        lines.append(f"  {seconds:7.1f} s  {name}")
    lines += [f"no report from a session (it did not finish): {path}" for path in totals.missing]
    lines.append(f"suite wall time: {_minutes(wall_s)} (budget: {BUDGET_MIN} min on a quiet 2-core box)")
    if run_s is not None:
        lines.append(f"whole run, set-up and lint included: {_minutes(run_s)}")
    failed = totals.failed + len(totals.missing)
    closing = f"suite: {totals.passed} passed, {failed} failed"
    lines.append(closing + (f", {totals.skipped} skipped" if totals.skipped else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--started", type=float, required=True, help="the run's start, in epoch seconds")
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args(argv)
    totals = read_reports(args.reports)
    now = time.time()
    run_started = os.environ.get("DELTACC_RUN_STARTED")
    run_s = now - float(run_started) if run_started else None
    print("\n".join(summary_lines(totals, now - args.started, run_s)))
    return 1 if totals.failed or totals.missing else 0


if __name__ == "__main__":
    sys.exit(main())
