"""A Spark driver process that dies at a chosen point: ``python -m tests.chaos.victim``.

Two modes, both started in a new session (process group) so that the supervisor or the victim itself can
kill the driver together with its JVM and Python workers:

- ``--jobs FILE``: run transfers (a MERGE job with ``run_job``, re-run until it succeeds, then the
  transfer-log append), printing one ``CHAOS_RESULT <json>`` line per finished transfer. A job's ``kill``
  says where to die instead of reporting: ``after_merge`` (the MERGE committed, the log append never ran),
  ``after_log`` (both committed) or ``mid_write`` (a source hook holds the MERGE's Spark job inside the
  write, after it touched the ``entered`` file; the supervisor SIGKILLs the process group there).
- ``--spec FILE --die-at-report``: the real CLI (``airflow_provider_deltacc.spark_job.main.main``), killed
  when it starts to print its ``DELTACC_REPORT`` line, i.e. after the commit landed and before it reports.

Before killing itself the victim writes ``CHAOS_DYING <point>`` to stderr so the supervisor can tell an
injected death from a crash.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.jvm_options import JVM

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RESULT_PREFIX = "CHAOS_RESULT "
RERUN_PREFIX = "CHAOS_RERUN "
DYING_PREFIX = "CHAOS_DYING "


def die(point: str) -> None:
    """SIGKILL this process group (driver, JVM, Python workers) at once, with no chance to report."""
    sys.stderr.write(f"{DYING_PREFIX}{point}\n")
    sys.stderr.flush()
    os.killpg(os.getpgrp(), signal.SIGKILL)


def held_hook(entered: str) -> Any:
    """A source hook that blocks the MERGE's Spark job inside the write, after touching ``entered``."""

    def hook(frame: DataFrame, attempt: int) -> DataFrame:
        from pyspark.sql import functions as F
        from pyspark.sql.types import BooleanType

        def hold(_: Any) -> bool:
            import time

            open(entered, "a").close()
            time.sleep(600)
            return True

        return frame.where(F.udf(hold, BooleanType())(F.col("account")))

    return hook


#: Runs of a victim's MERGE: the supervisor does not re-run a victim, so a MERGE that fails (e.g. its conflict
#: retries ran out on a busy machine) is re-run here with the same identity, as Airflow retries a task, until
#: it commits and the planned fault can fire. Each re-run is announced with its reason (``CHAOS_RERUN``) at
#: once, so the supervisor counts it even if the victim dies afterwards.
MERGE_RUNS = 5


def rerun_reason(code: int, report: dict[str, Any]) -> str:
    """Why a MERGE run failed: ``conflict:<KIND>`` when its job gave up on a classified conflict (retries
    ran out, or one that is not retryable in the job), else its exit code and report status."""
    from airflow_provider_deltacc.contract.exit_codes import ExitCode

    attempts = report.get("attempts") or []
    conflict = attempts[-1].get("conflict") if attempts else None
    if code in (ExitCode.CONFLICT_RETRYABLE, ExitCode.CONFLICT_FATAL) and conflict:
        return f"conflict:{str(conflict['kind']).upper()}"
    return f"exit {code}: {report.get('status')}"


#: The victim's JVM lives for one job: the tests' JVM options (C1 compilation only) cost far less CPU than
#: they would save, also when it runs outside the test run (bench/chaos.py).
VICTIM_CONF = {"spark.driver.extraJavaOptions": " ".join(JVM)}


def start_session() -> None:
    """Start the victim's local Delta session, which ``run_job`` and the CLI then find active."""
    from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

    local_delta_session(app_name="chaos-victim", extra_conf=VICTIM_CONF)


def run_jobs(path: str) -> int:
    """Run the transfers in the jobs file; see the module docstring."""
    from airflow_provider_deltacc.spark_job.main import run_job
    from tests.chaos.workload import Transfer, append_log

    jobs = json.loads(Path(path).read_text(encoding="utf-8"))
    for job in jobs:
        transfer = Transfer(**job["transfer"])
        kill = job.get("kill")
        hook = held_hook(job["entered"]) if kill == "mid_write" else None
        for run in range(MERGE_RUNS):
            code, merge = run_job(job["merge"], source_hook=hook)
            if code == 0:
                break
            if run + 1 < MERGE_RUNS:
                rerun = {"id": transfer.id, "reason": rerun_reason(code, merge)}
                sys.stdout.write(RERUN_PREFIX + json.dumps(rerun) + "\n")
                sys.stdout.flush()
        if kill == "after_merge" and code == 0 and merge["status"] == "committed":
            die("after_merge")
        log = None
        if code == 0:
            log = append_log(job["log_table"], transfer)
            if kill == "after_log" and merge["status"] == "committed":
                die("after_log")
        result = {"id": transfer.id, "merge_code": code, "merge": merge, "log": log}
        sys.stdout.write(RESULT_PREFIX + json.dumps(result, default=str) + "\n")
        sys.stdout.flush()
    return 0


class _DieAtReport:
    """Stands in for stdout: dies when the CLI starts to write its report line."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def write(self, text: str) -> int:
        if text.startswith("DELTACC_REPORT"):
            die("at_report")
        return int(self._real.write(text))

    def flush(self) -> None:
        self._real.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.victim", description=__doc__)
    parser.add_argument("--jobs", help="a JSON list of transfer jobs")
    parser.add_argument("--spec", help="a job spec file for the real CLI")
    parser.add_argument("--die-at-report", action="store_true", help="with --spec: die instead of reporting")
    args = parser.parse_args(argv)
    start_session()
    if args.jobs:
        return run_jobs(args.jobs)
    from airflow_provider_deltacc.spark_job.main import main as cli_main

    if args.die_at_report:
        sys.stdout = _DieAtReport(sys.stdout)
    return cli_main(["--spec", args.spec])


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter finalization (pyarrow/JVM threads), as the test session does
