"""Analyse DAGs: every provider task, every pair that can run at once on one table, judged."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.advisor.classify import ScopeMemo, TableContext, judge
from airflow_provider_deltacc.advisor.findings import Finding, FindingLevel
from airflow_provider_deltacc.advisor.graph import dag_reachability
from airflow_provider_deltacc.advisor.pairs import DagModel, find_candidates
from airflow_provider_deltacc.advisor.schedules import dag_schedule
from airflow_provider_deltacc.advisor.tasks import (
    TaskFacts,
    is_provider_task,
    table_partition_columns,
    task_facts,
)
from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.table import Table

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from airflow_provider_deltacc.delta_log.table_facts import TableFacts

#: Reads a table's partition columns (and whether it is partitioned), or its whole layout (partition columns
#: and whether it is liquid-clustered); None when it cannot be read.
ColumnsReader = Callable[[str], "tuple[str, ...] | TableFacts | None"]


@dataclass(frozen=True)
class Analysis:
    """The advisor's result.

    :param findings: every pair, worst first.
    :param tasks: every provider task found.
    :param dag_ids: the DAGs analysed.
    """

    findings: tuple[Finding, ...]
    tasks: tuple[TaskFacts, ...]
    dag_ids: tuple[str, ...]

    def count(self, level: FindingLevel) -> int:
        """How many pairs have this verdict."""
        return sum(1 for f in self.findings if f.level is level)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict."""
        return {
            "dags": list(self.dag_ids),
            "provider_tasks": len(self.tasks),
            "counts": {level.value: self.count(level) for level in FindingLevel},
            "findings": [f.to_dict() for f in self.findings],
        }


def _context(table: str, members: list[TaskFacts], read_columns: ColumnsReader | None) -> TableContext:
    columns = table_partition_columns(members)
    partitioned: bool | None = None
    read_clustered = False
    if read_columns is not None:
        read = read_columns(table)
        if read is not None:
            found = read if isinstance(read, tuple) else read.partition_columns
            read_clustered = not isinstance(read, tuple) and read.clustered
            columns, partitioned = list(found), bool(found)
    profile = next((t.profile for t in members if t.profile is not None), EngineProfile.OSS_SERIALIZABLE)
    traits = next((t.traits for t in members if t.traits is not None), TableTraits())
    if partitioned is not None:
        traits = replace(traits, partitioned=partitioned)
    if not traits.partitioned and (read_clustered or any(t.cluster_by for t in members)):
        # Clustered (its log says so, or a task creates it CLUSTER BY): no partitions, whatever pins say.
        traits, columns, partitioned = replace(traits, clustered=True), [], False
    return TableContext(table, tuple(columns), partitioned, profile, traits)


def analyse(
    dags: Iterable[Any],
    *,
    reference: datetime | None = None,
    horizon: timedelta = timedelta(days=7),
    default_duration: timedelta = timedelta(hours=1),
    read_columns: ColumnsReader | None = None,
) -> Analysis:
    """Find and judge every pair of provider tasks that can run at the same time on one table.

    :param dags: Airflow DAGs (analysed together: cross-DAG pairs are found too): DAG objects of DAG files, or
        serialized DAGs as the api-server reads them from the metadata DB (``SerializedDAG``).
    :param reference: where schedule horizons start; now by default.
    :param horizon: how far ahead fire times are compared.
    :param default_duration: how long a run lasts when its DAG has no ``dagrun_timeout``.
    :param read_columns: optional reader of a table's partition columns (e.g. from its Delta log); never
        required.
    """
    reference = reference or datetime.now(UTC)
    models: list[DagModel] = []
    for dag in dags:
        tasks = tuple(task_facts(t) for t in dag.task_dict.values() if is_provider_task(t))
        models.append(
            DagModel(
                dag_id=str(dag.dag_id),
                schedule=dag_schedule(dag, default_duration=default_duration),
                reachability=dag_reachability(dag),
                tasks=tasks,
            )
        )
    candidates = find_candidates(models, reference=reference, horizon=horizon)
    every = [t for m in models for t in m.tasks]
    by_table: dict[str, list[TaskFacts]] = {}
    for task in every:
        by_table.setdefault(task.table or "", []).append(task)
    contexts: dict[str, tuple[TableContext, ScopeMemo]] = {}
    findings = []
    for candidate in candidates:
        if candidate.table not in contexts:
            members = by_table.get(candidate.table, []) + by_table.get("", [])
            contexts[candidate.table] = (_context(candidate.table, members, read_columns), {})
        context, memo = contexts[candidate.table]
        findings.append(judge(candidate, context, memo))
    findings.sort(key=lambda f: (f.level.rank, f.table, f.task_a, f.task_b))
    return Analysis(tuple(findings), tuple(every), tuple(m.dag_id for m in models))


def delta_log_columns(storage_options: Mapping[str, str] | None = None) -> ColumnsReader:
    """A :data:`ColumnsReader` that reads the table's layout (partition columns, liquid clustering) from its
    Delta log with delta-rs.

    Tables that cannot be read (a catalog name, no table yet, no access) answer None: unknown.

    :param storage_options: delta-rs storage options.
    """
    from airflow_provider_deltacc.delta_log.table_facts import read_table_facts

    def read(table: str) -> TableFacts | None:
        try:
            return read_table_facts(Table(table), storage_options)
        except Exception as exc:
            log.debug("cannot read %s with delta-rs: %s", table, exc)
            return None

    return read
