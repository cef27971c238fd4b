"""A rival writer for ``dag.test()`` runs: one real, deterministic Delta conflict inside an operator's job.

Under ``dag.test()`` the tasks run one after another in the test process, and ``in_process`` mode runs the
Spark job on the test's shared JVM, so a conflict needs a second writer that commits *while* the task's
transaction is open. :class:`Rival` wraps the job entry point that ``DeltaCCHook`` calls
(``spark_job.main.run_job``): for each planned ``(operation, table)`` the first attempt of the first such
job gets its source filtered through a :class:`~tests.support.gate.Gate` UDF, so its Spark job blocks
*after* Delta has taken the transaction's snapshot. A rival thread waits at the gate, checks through
``statusTracker`` that the blocked Spark job is the operation's own (Delta names MERGE jobs "MERGE operation
- …"), commits exactly one rival write through the same JVM, and opens the gate. The held commit then meets
Delta's real conflict check. Each plan entry is used once; later attempts and tries run untouched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.gate import Gate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RivalAction = Callable[[dict[str, Any]], None]


@dataclass
class Hold:
    """One planned hold: which job, what the rival commits, and what was observed."""

    operation: str
    table: str
    action: RivalAction
    gate_column: str
    task_id: str | None = None
    spec: dict[str, Any] | None = None
    active_jobs: list[str] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Rival:
    """See the module docstring."""

    def __init__(self, spark: SparkSession, tmp_path: Path) -> None:
        self.spark = spark
        self.tmp_path = tmp_path
        self.holds: list[Hold] = []
        self._lock = threading.Lock()

    def plan(
        self, operation: str, table: str, action: RivalAction, *, gate_column: str, task_id: str | None = None
    ) -> Hold:
        """Hold the first attempt of the first ``operation`` job on ``table`` (of ``task_id``, if given: it is
        read from the derived txn app id ``airflow/<dag>/<task>/…``) while ``action`` commits."""
        hold = Hold(operation, table, action, gate_column, task_id)
        self.holds.append(hold)
        return hold

    def _claim(self, spec: dict[str, Any]) -> Hold | None:
        with self._lock:
            for hold in self.holds:
                app_id = str((spec.get("txn") or {}).get("app_id", ""))
                if (
                    hold.spec is None
                    and (spec.get("operation"), spec.get("table")) == (hold.operation, hold.table)
                    and (hold.task_id is None or f"/{hold.task_id}/" in app_id)
                ):
                    hold.spec = spec
                    return hold
        return None

    def _active_job_descriptions(self) -> list[str]:
        tracker = self.spark.sparkContext.statusTracker()
        store: Any = self.spark.sparkContext._jsc.sc().statusStore()  # type: ignore[union-attr]
        descriptions = []
        for job_id in tracker.getActiveJobsIds():
            description = store.job(job_id).description()
            descriptions.append(str(description.get()) if description.isDefined() else "")
        return descriptions

    def _serve(self, hold: Hold, gate: Gate) -> None:
        try:
            gate.wait_entered()
            hold.active_jobs = self._active_job_descriptions()
            assert hold.spec is not None
            hold.action(hold.spec)
        except BaseException as exc:  # reported by check()
            hold.error = exc
        finally:
            gate.release()
            hold.done.set()

    def wrap(self, run_job: Callable[..., Any]) -> Callable[..., Any]:
        def run_job_with_rival(
            spec: Any, spark: Any = None, *, source_hook: Any = None, turns: Any = None, **kwargs: Any
        ) -> Any:
            view = _json_view(spec)
            hold = self._claim(view) if view is not None else None
            if hold is None:
                return run_job(spec, spark, source_hook=source_hook, turns=turns, **kwargs)
            gate = Gate(self.tmp_path, timeout_s=120)
            column = hold.gate_column

            def held_first_attempt(frame: DataFrame, attempt: int) -> DataFrame:
                return frame.coalesce(1).where(gate.column(column)) if attempt == 1 else frame

            rival = threading.Thread(target=self._serve, args=(hold, gate), daemon=True)
            rival.start()
            try:
                return run_job(spec, spark, source_hook=held_first_attempt, turns=turns, **kwargs)
            finally:
                gate.release()
                rival.join(timeout=120)

        return run_job_with_rival

    def check(self) -> None:
        """Every planned hold was used and its rival committed without error."""
        for hold in self.holds:
            assert hold.spec is not None, f"no {hold.operation} job on {hold.table} ran"
            assert hold.done.is_set(), f"the rival for {hold.operation} on {hold.table} never ran"
            if hold.error is not None:
                raise AssertionError(f"the rival for {hold.operation} on {hold.table} failed") from hold.error


@contextmanager
def rival_writer(spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Rival]:
    """Install a :class:`Rival` around the job entry point the in-process hook calls."""
    import airflow_provider_deltacc.spark_job.main as job_main

    rival = Rival(spark, tmp_path)
    monkeypatch.setattr(job_main, "run_job", rival.wrap(job_main.run_job))
    yield rival


def _json_view(spec: Any) -> dict[str, Any] | None:
    """The spec as the actions read it: its JSON form (an operator's typed spec), or the dict as given."""
    from airflow_provider_deltacc.contract.spec import JobSpec
    from tests.support.spec_views import json_view

    if not isinstance(spec, dict | JobSpec):
        return None
    try:
        return json_view(spec)
    except ValueError:  # a source function that runs in this process has no JSON form
        txn = spec.txn.to_dict() if spec.txn is not None else None
        return {"operation": spec.operation, "table": spec.table.name, "txn": txn}
