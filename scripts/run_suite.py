"""Run the whole suite in two lanes side by side, then print where the minutes went.

``make test`` runs this. The machine has two cores and most integration tests wait on a JVM or a server, so:

- the **JVM lane** runs every test that starts Spark (a JVM in the test process, a Spark Connect server, a
  spark-submit driver, an Airflow stack whose tasks write through Spark) in two workers, a module at a time
  each (``--dist loadfile``): a worker's tests share its JVM and the servers its fixtures start once, and
  the ``slow_module`` modules go first so both workers end together (most of these tests wait on a JVM, a
  server or a subprocess, so two of them share the two cores well). Both workers share one Spark Connect
  server, started here as the lanes start: a JVM warms up (its JIT compiles Spark's and Delta's code) on
  its first few dozen operations, at about three times the CPU of the same operations warm, so one warm
  server costs less than one per worker;
- the **light lane** runs, meanwhile, the class archive the test JVMs map (made once per machine), ruff
  and mypy, the unit tests, and the integration tests marked ``jvm_free`` (lease stores on PostgreSQL and
  SQLite, the UI's aggregation, the api-server's pages, ...). Its steps after the class archive run at
  :data:`LIGHT_NICE`: the JVM lane is the run's critical path and leaves about a fifth of the two cores idle
  (its tests wait on servers, subprocesses and leases), so the light lane takes the cores when the JVM lane
  does not want them instead of slowing it down in its busiest first ten minutes. The class archive runs as
  is: the JVMs started before it is made run without it.

The JVM lane streams to the terminal; the light lane writes ``.test-reports/light.log``, printed when both
lanes are done. The closing lines (``scripts/suite_summary.py``) give each phase's and each module's wall
time, a calibration of this box, and the whole run against the budget; the very last line is
``suite: N passed, N failed``. The exit status is non-zero when lint or any test failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / ".test-reports"
VENV_BIN = ROOT / ".venv" / "bin"

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
import suite_summary  # noqa: E402

from tests.support import spark_connect  # noqa: E402
from tests.support.jvm_options import spark_submit_opts  # noqa: E402

#: The niceness of the light lane's steps after the class archive (see the module's notes).
LIGHT_NICE = 10


@dataclass(frozen=True)
class Step:
    """One command of a lane: its name in the breakdown, its argv, its JUnit report (pytest steps), and the
    niceness it runs at (``nice -n``; 0 runs it as is)."""

    name: str
    argv: tuple[str, ...]
    report: str | None = None
    nice: int = 0

    @property
    def command(self) -> tuple[str, ...]:
        return ("nice", "-n", str(self.nice), *self.argv) if self.nice else self.argv


def _pytest(name: str, marks: str, *extra: str, nice: int = 0) -> Step:
    report = f"{name}.xml"
    argv = (str(VENV_BIN / "pytest"), "-m", marks, f"--junitxml={REPORTS / report}", *extra)
    return Step(name, argv, report, nice)


#: Two workers, a module at a time each, in collection order (``slow_module`` first: tests/conftest.py).
_TWO_WORKERS = ("-n", "2", "--dist", "loadfile", "--no-loadscope-reorder")
JVM_LANE = (_pytest("integration-jvm", "not unit and not jvm_free", *_TWO_WORKERS),)
LIGHT_LANE = (
    # The class archive the test JVMs map (tests/support/class_archive.py), made once per machine while the
    # JVM lane starts: a JVM started before it is there runs without it.
    Step("class archive", (str(VENV_BIN / "python"), "-m", "tests.support.class_archive")),
    Step(
        "ruff",
        (
            str(VENV_BIN / "ruff"),
            "check",
            *(d for d in ("airflow_provider_deltacc", "tests", "demo", "dags", "bench", "scripts")),
        ),
        nice=LIGHT_NICE,
    ),
    Step("mypy", (str(VENV_BIN / "mypy"),), nice=LIGHT_NICE),
    _pytest("unit", "unit", "-q", nice=LIGHT_NICE),
    _pytest("integration-light", "jvm_free and not unit", "-q", nice=LIGHT_NICE),
)


def run_lane(
    steps: tuple[Step, ...], log: Path | None, timings: dict[str, float], codes: dict[str, int]
) -> None:
    """Run ``steps`` one after another (each whatever the last one's outcome), recording each one's wall time
    and exit status; output to ``log`` (appended) or, without one, to the terminal."""
    for step in steps:
        started = time.monotonic()
        if log is None:
            code = subprocess.run(step.command, cwd=ROOT).returncode
        else:
            with log.open("a") as out:
                out.write(f"\n=== {step.name}: {' '.join(step.command)}\n")
                out.flush()
                code = subprocess.run(step.command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
        timings[step.name] = time.monotonic() - started
        # pytest's "no tests collected" (5) is a failure here too: every lane must run what it selects.
        codes[step.name] = code


def main() -> int:
    started = time.time()
    REPORTS.mkdir(exist_ok=True)
    for old in REPORTS.iterdir():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    # This environment may set PYTHONDONTWRITEBYTECODE: the venv's packages were compiled at install
    # (scripts/setup.sh), but without this every process of the run (pytest's workers, Airflow's task and
    # parsing processes, Spark's Python) would compile the provider's modules from source again, and
    # pytest would rewrite every test module's asserts again in each of its processes.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    calibration = calibrate()
    light_log = REPORTS / "light.log"
    timings: dict[str, float] = {}
    codes: dict[str, int] = {}
    lanes_started = time.monotonic()
    connect = spark_connect.ConnectServerProcess(
        REPORTS / "spark-connect", master=spark_connect.SHARED_MASTER, conf=spark_connect.SHARED_CONF
    )
    connect.work.mkdir()
    os.environ.setdefault("SPARK_SUBMIT_OPTS", spark_submit_opts())  # as tests/conftest.py sets it
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ[spark_connect.SHARED_LOG_ENV] = str(connect.launch())
    os.environ[spark_connect.SHARED_URL_ENV] = connect.server.url
    try:
        light = threading.Thread(target=run_lane, args=(LIGHT_LANE, light_log, timings, codes))
        light.start()
        run_lane(JVM_LANE, None, timings, codes)
    finally:
        connect.stop()
    jvm_lane_s = time.monotonic() - lanes_started
    light.join()
    light_lane_s = sum(timings[step.name] for step in LIGHT_LANE)
    log_name = light_log.relative_to(ROOT)
    print(f"\n=== the light lane (class archive, lint, unit, JVM-free integration), from {log_name}:")
    print(light_log.read_text())
    phases = suite_summary.Phases(
        setup_s=_setup_seconds(started),
        steps=timings,
        exit_codes=codes,
        lanes={"JVM lane": jvm_lane_s, "light lane": light_lane_s},
        calibration=calibration,
    )
    reports = [REPORTS / step.report for step in (*JVM_LANE, *LIGHT_LANE) if step.report]
    return suite_summary.report(reports, phases, suite_started=started)


def calibrate() -> dict[str, float]:
    """``scripts/calibrate.py``'s figures, taken before the lanes start (on a quiet box); none when it
    fails (the closing lines then say so, and the suite runs all the same)."""
    done = subprocess.run(
        [str(VENV_BIN / "python"), str(ROOT / "scripts" / "calibrate.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print(f"calibration failed (exit {done.returncode}):\n{done.stderr[-2000:]}", file=sys.stderr)
        return {}
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _setup_seconds(suite_started: float) -> float | None:
    """The time from ``.ci/run``'s start (``DELTACC_RUN_STARTED``) to this script's: the set-up."""
    run_started = os.environ.get("DELTACC_RUN_STARTED")
    return suite_started - float(run_started) if run_started else None


if __name__ == "__main__":
    sys.exit(main())
