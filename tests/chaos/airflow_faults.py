"""Faults the tasks of the Airflow chaos DAG bring on themselves on their first try that runs, as planned.

The plan is a JSON file named by :data:`PLAN_ENV` (see :mod:`tests.chaos.airflow_workload`); it maps a mapped
task's index to a :class:`FaultPoint`. A task with a fault writes its pid into its fault directory and then
waits where the test kills it (SIGKILL, so nothing of the task runs afterwards):

- ``mid_merge``: the MERGE's first attempt reads its source through a :class:`~tests.support.gate.Gate`, a
  UDF on the Spark Connect server's Python worker that blocks once the attempt's Spark job runs (the snapshot
  is read, nothing is committed). The test kills the task while the server holds the MERGE, then opens the
  gate: the orphaned MERGE may still commit on the server, and the retry must then find it in the log.
- ``after_commit``: the commit landed and the report is not published yet.

Imported by the DAG file in the Airflow stack's processes (the repository is on their ``PYTHONPATH``).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.operators import DeltaMergeOperator
from tests.support.gate import Gate

if TYPE_CHECKING:
    from airflow.sdk import Context
    from pyspark.sql import DataFrame

    from airflow_provider_deltacc.retries.tries import TryDecision

PLAN_ENV = "DELTACC_CHAOS_PLAN"
#: The connections the chaos DAGs name, so they run beside a deployment's own: the lease store the run stops
#: and starts again, and the Spark Connect server the transfers run on.
LEASES_CONN_ID = "deltacc_chaos_leases"
CONNECT_CONN_ID = "deltacc_chaos_connect"
#: How long a task at a fault point waits to be killed before it gives up (and fails its try).
HOLD_S = 600.0


class FaultPoint(StrEnum):
    """Where a task dies."""

    MID_MERGE = "mid_merge"
    AFTER_COMMIT = "after_commit"


def load_plan() -> dict[str, Any]:
    """The run's plan, written by the test before the DAG file is parsed."""
    return dict(json.loads(Path(os.environ[PLAN_ENV]).read_text()))


def fault_dir(plan: dict[str, Any], map_index: int) -> Path:
    """Where the task with this map index leaves its pid and its gate."""
    return Path(plan["faults_dir"]) / f"transfer-{map_index}"


def _planned(context: Context) -> tuple[FaultPoint, Path] | None:
    """The task's fault and its directory, on every try until one reaches the fault point; else None.

    Creating the fault directory is the claim, and the claimant's pid is written in it. A try that died
    before its fault point (its process is gone and the fault point never marked ``entered``) leaves the
    fault to the next try, which claims it again here: the task decides this itself, so no poll of the
    test's driver can miss it (the scheduler's restart taking a queued or starting try, a try that lost its
    conflicts and failed). A claimant that is still alive keeps the fault.
    """
    ti = context["ti"]
    plan = load_plan()
    map_index = -1 if ti.map_index is None else int(ti.map_index)
    point = plan["faults"].get(str(map_index))
    if point is None:
        return None
    directory = fault_dir(plan, map_index)
    directory.parent.mkdir(parents=True, exist_ok=True)
    try:
        directory.mkdir()
    except FileExistsError:
        if (directory / "entered").exists() or process_alive(claimant(directory)):
            return None
        with (directory / "reclaims").open("a") as reclaims:
            reclaims.write(f"try {ti.try_number} (pid {os.getpid()}) after pid {claimant(directory)}\n")
    claim = directory / f"pid.{os.getpid()}"
    claim.write_text(str(os.getpid()))
    claim.replace(directory / "pid")
    return FaultPoint(point), directory


def claimant(directory: Path) -> int | None:
    """The pid of the try that holds the fault in ``directory``; None until one wrote it."""
    with contextlib.suppress(OSError, ValueError):
        return int((directory / "pid").read_text())
    return None


def process_alive(pid: int | None) -> bool:
    """Whether ``pid`` runs (a zombie does not); True for no pid yet (a claimant between mkdir and write)."""
    if pid is None:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


def hold_first_attempt(directory: Path, *, column: str = "account", tasks: int | None = None) -> None:
    """Make the job's first attempt block on the server at a gate in ``directory``, reading ``column`` of
    the source; with ``tasks``, the source is spread over that many partitions first, so that many tasks
    block at once (one on each executor of a cluster with that many cores)."""
    import airflow_provider_deltacc.spark_job.main as job_main

    gate = Gate.existing(directory, timeout_s=HOLD_S)
    run_job = job_main.run_job

    def held(frame: DataFrame, attempt: int) -> DataFrame:
        if attempt != 1:
            return frame
        return gate.hold(frame if tasks is None else frame.repartition(tasks), column)

    def run_job_held(
        spec: Any, spark: Any = None, *, source_hook: Any = None, turns: Any = None, **kwargs: Any
    ) -> Any:
        return run_job(spec, spark, source_hook=held, turns=turns, **kwargs)

    job_main.run_job = run_job_held


class ChaosMergeOperator(DeltaMergeOperator):
    """A MERGE that dies where the chaos plan says, on its first try that runs (see the module docstring)."""

    def execute(self, context: Context) -> dict[str, Any]:
        self._fault = _planned(context)
        if self._fault is not None and self._fault[0] is FaultPoint.MID_MERGE:
            hold_first_attempt(self._fault[1])
        return super().execute(context)

    def _publish(
        self, context: Context, report: dict[str, Any], decision: TryDecision | None
    ) -> dict[str, Any]:
        fault = getattr(self, "_fault", None)
        if fault is not None and fault[0] is FaultPoint.AFTER_COMMIT and report.get("status") == "committed":
            (fault[1] / "entered").touch()
            time.sleep(HOLD_S)
            raise RuntimeError(f"the chaos test did not kill this task within {HOLD_S:.0f} s of its commit")
        return super()._publish(context, report, decision)
