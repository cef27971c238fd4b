"""The closing lines of a ``make test`` run: where the minutes went, and one "N passed, N failed" line.

:func:`report` reads the JUnit XML reports the pytest steps wrote (``pytest --junitxml``; a missing one counts
as a failed step) and prints, in this order: each phase's wall time (set-up, each lane, each step of a lane),
each integration module's wall time per lane (the sum of its tests' setup, call and teardown, so a module's
shared servers count in its first test), a calibration of this box against the one the budget was set on,
the ten slowest tests, each failed test with where and why it failed (the run's log may be read from its
end only), the whole run against the budget (with the five slowest modules when over it), and last
``suite: N passed, N failed``. ``scripts/run_suite.py`` calls it.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SLOWEST = 10
OVER_BUDGET_MODULES = 5
#: The most characters of a failure's message in the closing lines.
FAILURE_CHARS = 600
_FAILED_AT = re.compile(r"^(\S+\.py):(\d+): ", re.MULTILINE)
#: Minutes the whole run (set-up included) may take on a quiet 2-core box; CI stops at 90.
BUDGET_MIN = 25
#: ``scripts/calibrate.py``'s figures on the box the budget was set on (2 cores, quiet).
REFERENCE = {"python_loop_s": 0.18, "spark_start_s": 6.6, "spark_job_s": 2.2}
_CALIBRATION_NAMES = {
    "python_loop_s": "a fixed pure-Python loop",
    "spark_start_s": "a local Delta Spark session's start",
    "spark_job_s": "a fixed local Spark job",
}


@dataclass
class Totals:
    """What the steps' reports add up to."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    missing: list[str] = field(default_factory=list)
    durations: list[tuple[float, str]] = field(default_factory=list)
    #: per report (its file's stem), each module's summed test time and test count
    modules: dict[str, dict[str, tuple[float, int]]] = field(default_factory=dict)
    #: per report (its file's stem), how many of its tests failed
    failed_by_report: dict[str, int] = field(default_factory=dict)
    #: each failed test and where and why it failed, one line each
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Phases:
    """The run's own timings, measured by ``scripts/run_suite.py``.

    :param setup_s: from ``.ci/run``'s start to the suite's (None when not run through ``.ci/run``).
    :param steps: each step's wall time, by step name.
    :param exit_codes: each step's exit status, by step name.
    :param lanes: each lane's wall time, by lane name.
    :param calibration: the box's figures (keys of :data:`REFERENCE`).
    """

    setup_s: float | None
    steps: dict[str, float]
    exit_codes: dict[str, int]
    lanes: dict[str, float]
    calibration: dict[str, float]


def module_of(classname: str) -> str:
    """The test module of a JUnit ``classname`` (``tests.x.test_y`` or ``tests.x.test_y.TestZ``)."""
    head, _, last = classname.rpartition(".")
    return head if head and last[:1].isupper() else classname


def read_reports(paths: list[Path]) -> Totals:
    """Counts, per-test durations and per-module sums (setup, call and teardown together, as JUnit XML
    records them)."""
    totals = Totals()
    for path in paths:
        if not path.exists():
            totals.missing.append(str(path))
            continue
        modules: dict[str, tuple[float, int]] = defaultdict(lambda: (0.0, 0))
        failed_before = totals.failed
        for case in ET.parse(path).getroot().iter("testcase"):
            classname = case.get("classname", "")
            seconds = float(case.get("time", "0") or 0)
            totals.durations.append((seconds, f"{classname}::{case.get('name', '')}"))
            spent, count = modules[module_of(classname)]
            modules[module_of(classname)] = (spent + seconds, count + 1)
            failure = case.find("failure")
            failure = case.find("error") if failure is None else failure
            if failure is not None:
                totals.failed += 1
                totals.failures.append(f"{classname}::{case.get('name', '')}: {failure_line(failure)}")
            elif case.find("skipped") is not None:
                totals.skipped += 1
            else:
                totals.passed += 1
        totals.modules[path.stem] = dict(modules)
        totals.failed_by_report[path.stem] = totals.failed - failed_before
    return totals


def failure_line(failure: ET.Element) -> str:
    """Where a JUnit failure happened (the last test-file line of its traceback) and its message, on one
    line and cut to :data:`FAILURE_CHARS`."""
    places = _FAILED_AT.findall(failure.text or "")
    where = f"{places[-1][0]}:{places[-1][1]}: " if places else ""
    message = " ".join((failure.get("message") or "").split())
    line = where + (message or "(no message)")
    return line if len(line) <= FAILURE_CHARS else line[: FAILURE_CHARS - 1] + "…"


def minutes(seconds: float) -> str:
    """``12 min 34 s``, rounded to the second (59.6 s is ``1 min 00 s``, not ``0 min 60 s``)."""
    whole_minutes, rest = divmod(round(seconds), 60)
    return f"{whole_minutes} min {rest:02d} s"


def calibration_line(calibration: dict[str, float]) -> str:
    """This box's figures against the reference box's, and their mean ratio: a run on a box 1.6x slower
    reads its whole time against 1.6x the budget."""
    parts, ratios = [], []
    for key, reference in REFERENCE.items():
        if key in calibration:
            ratios.append(calibration[key] / reference)
            parts.append(f"{_CALIBRATION_NAMES[key]} {calibration[key]:.2f} s (reference {reference:.2f} s)")
    if not ratios:
        return "calibration: none measured"
    return f"calibration: {'; '.join(parts)}: this box is {sum(ratios) / len(ratios):.2f}x the reference"


def phase_lines(phases: Phases) -> list[str]:
    """Set-up, each lane and each step, with each failed step named."""
    lines = ["where the minutes went:"]
    if phases.setup_s is not None:
        lines.append(f"  {minutes(phases.setup_s):>14}  set-up (install, jars, servers' packages)")
    for lane, seconds in phases.lanes.items():
        lines.append(f"  {minutes(seconds):>14}  {lane}")
    for step, seconds in phases.steps.items():
        code = phases.exit_codes.get(step, 0)
        lines.append(f"  {minutes(seconds):>14}    {step}" + (f" (FAILED, exit {code})" if code else ""))
    return lines


def module_lines(totals: Totals) -> list[str]:
    """Each integration report's modules, slowest first."""
    lines = []
    for report, modules in totals.modules.items():
        if not report.startswith("integration"):
            continue
        lines.append(f"modules of {report}, slowest first (wall time, tests):")
        for module, (seconds, count) in sorted(modules.items(), key=lambda item: -item[1][0]):
            lines.append(f"  {minutes(seconds):>14}  {module} ({count})")
    return lines


def slowest_modules(totals: Totals, n: int) -> list[tuple[float, str]]:
    """The ``n`` slowest modules of every report."""
    every = [
        (seconds, module) for modules in totals.modules.values() for module, (seconds, _) in modules.items()
    ]
    return sorted(every, reverse=True)[:n]


def summary_lines(totals: Totals, phases: Phases, wall_s: float) -> list[str]:
    """The closing lines; the last is the suite's "N passed, N failed" line."""
    lines = phase_lines(phases) + module_lines(totals)
    lines.append(calibration_line(phases.calibration))
    lines.append(f"{SLOWEST} slowest tests:")
    for seconds, name in sorted(totals.durations, reverse=True)[:SLOWEST]:
        lines.append(f"  {seconds:7.1f} s  {name}")
    lines += [f"no report from a step (it did not finish): {path}" for path in totals.missing]
    if totals.failures:
        lines.append("failed tests, where and why:")
        lines += [f"  {failure}" for failure in totals.failures]
    whole = wall_s + (phases.setup_s or 0.0)
    label = (
        "whole run, set-up included" if phases.setup_s is not None else "suite wall time (no set-up measured)"
    )
    lines.append(f"{label}: {minutes(whole)} (budget: {BUDGET_MIN} min on a quiet 2-core box)")
    if whole > BUDGET_MIN * 60:
        lines.append(
            f"OVER BUDGET by {minutes(whole - BUDGET_MIN * 60)}; the {OVER_BUDGET_MODULES} slowest modules:"
        )
        lines += [f"  {minutes(s):>14}  {m}" for s, m in slowest_modules(totals, OVER_BUDGET_MODULES)]
    failed = totals.failed + len(totals.missing) + len(failed_steps_without_a_failed_test(totals, phases))
    closing = f"suite: {totals.passed} passed, {failed} failed"
    lines.append(closing + (f", {totals.skipped} skipped" if totals.skipped else ""))
    return lines


def failed_steps_without_a_failed_test(totals: Totals, phases: Phases) -> list[str]:
    """Steps that failed with no failed test to show for it: lint, or a pytest step that exited non-zero
    (collected nothing, crashed after its tests) with no failure in its report. Each counts as one failure;
    a missing report is counted already."""
    missing = {Path(path).stem for path in totals.missing}
    return [
        step
        for step, code in phases.exit_codes.items()
        if code and step not in missing and not totals.failed_by_report.get(step)
    ]


def report(paths: list[Path], phases: Phases, *, suite_started: float) -> int:
    """Print the closing lines; the exit status: 1 when a step failed or a report is missing."""
    totals = read_reports(paths)
    print("\n".join(summary_lines(totals, phases, time.time() - suite_started)))
    return 1 if totals.failed or totals.missing or any(phases.exit_codes.values()) else 0
