"""Run operators at the same time, each in a thread of its own, as concurrent Airflow tasks would."""

from __future__ import annotations

import threading
from typing import Any

from tests.unit.airflow_face.conftest import make_context


def run_side_by_side(operators: list[Any], timeout_s: float = 300.0) -> dict[str, Any]:
    """Execute every operator at once; each task id maps to its report, or to the exception it raised."""
    outcomes: dict[str, Any] = {}

    def run(op: Any) -> None:
        try:
            outcomes[op.task_id] = op.execute(make_context(task_id=op.task_id))
        except BaseException as exc:  # the caller asserts on it
            outcomes[op.task_id] = exc

    threads = [threading.Thread(target=run, args=(op,), name=op.task_id) for op in operators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)
    return outcomes


def statuses(outcomes: dict[str, Any]) -> dict[str, Any]:
    """Each task's report status, or its exception."""
    return {task: out["status"] if isinstance(out, dict) else out for task, out in outcomes.items()}
