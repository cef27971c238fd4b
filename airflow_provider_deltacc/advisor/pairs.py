"""Find the pairs of provider tasks that can run at the same time on the same table.

- Two tasks of one DAG: no dependency path between them (they run concurrently in one run).
- Two tasks of different DAGs: their DAGs' runs can overlap (:mod:`.schedules`).
- A task against itself: its mapped instances run concurrently, or two runs of its DAG can be active at
  once (``max_active_runs`` > 1); ``max_active_tis_per_dag=1`` rules both out.

A task whose table is decided at run time is paired with every table's tasks (the worst case).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import combinations
from typing import Literal

from airflow_provider_deltacc.advisor.graph import Reachability
from airflow_provider_deltacc.advisor.schedules import Schedule, Timing, runs_overlap, schedules_overlap
from airflow_provider_deltacc.advisor.tasks import TaskFacts

PairKind = Literal["same_run", "cross_dag", "self"]
#: How reports name a table that is decided at run time.
UNKNOWN_TABLE = "(decided at run time)"


@dataclass(frozen=True)
class DagModel:
    """One DAG as the pair finder needs it.

    :param dag_id: the DAG.
    :param schedule: its runs.
    :param reachability: its dependency paths.
    :param tasks: its provider tasks.
    """

    dag_id: str
    schedule: Schedule
    reachability: Reachability
    tasks: tuple[TaskFacts, ...]


@dataclass(frozen=True)
class Candidate:
    """Two tasks (or one task twice) that can run at the same time on one table.

    :param a: one task.
    :param b: the other (``a`` itself for a self pair).
    :param table: the table they share.
    :param kind: ``same_run``, ``cross_dag`` or ``self``.
    :param why: why they can overlap in time.
    """

    a: TaskFacts
    b: TaskFacts
    table: str
    kind: PairKind
    why: str


def _self_timing(task: TaskFacts, runs: Timing) -> Timing:
    if task.max_active_tis_per_dag == 1:
        return Timing(False, "max_active_tis_per_dag=1")
    reasons = []
    if task.mapped:
        reasons.append("its mapped instances run concurrently")
    if runs.overlaps:
        reasons.append(runs.why)
    return Timing(bool(reasons), "; ".join(reasons))


def find_candidates(
    dags: Sequence[DagModel], *, reference: datetime, horizon: timedelta = timedelta(days=7)
) -> list[Candidate]:
    """Every pair of provider tasks that can run at the same time on the same table.

    :param dags: the DAGs to analyse together.
    :param reference: where schedule horizons start (aware).
    :param horizon: how far ahead fire times are computed.
    """
    by_dag = {d.dag_id: d for d in dags}
    tables: dict[str, list[TaskFacts]] = {}
    floating: list[TaskFacts] = []
    for model in dags:
        for task in model.tasks:
            if task.table is None:
                floating.append(task)
            else:
                tables.setdefault(task.table, []).append(task)
    timings: dict[tuple[str, str], Timing] = {}
    runs = {d.dag_id: runs_overlap(d.schedule, reference=reference, horizon=horizon) for d in dags}

    def cross(a: TaskFacts, b: TaskFacts) -> Timing:
        key = (min(a.dag_id, b.dag_id), max(a.dag_id, b.dag_id))
        if key not in timings:
            first, second = by_dag[key[0]].schedule, by_dag[key[1]].schedule
            timings[key] = schedules_overlap(first, second, reference=reference, horizon=horizon)
        return timings[key]

    found: list[Candidate] = []

    def consider(pairs: Iterable[tuple[TaskFacts, TaskFacts]], table: str) -> None:
        for a, b in pairs:
            if a.dag_id == b.dag_id:
                if by_dag[a.dag_id].reachability.connected(a.task_id, b.task_id):
                    continue
                found.append(Candidate(a, b, table, "same_run", "no dependency path between them"))
                continue
            timing = cross(a, b)
            if timing.overlaps:
                found.append(Candidate(a, b, table, "cross_dag", timing.why))

    for table, members in tables.items():
        consider(combinations(members, 2), table)
        consider(((a, b) for a in members for b in floating), table)
        for task in members:
            timing = _self_timing(task, runs[task.dag_id])
            if timing.overlaps:
                found.append(Candidate(task, task, table, "self", timing.why))
    consider(combinations(floating, 2), UNKNOWN_TABLE)
    for task in floating:
        timing = _self_timing(task, runs[task.dag_id])
        if timing.overlaps:
            found.append(Candidate(task, task, UNKNOWN_TABLE, "self", timing.why))
    return found
