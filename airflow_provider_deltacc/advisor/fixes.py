"""What to change so a pair stops conflicting: pin partitions, stage then merge, add a dependency, or move
maintenance into a window (the gated maintenance operators)."""

from __future__ import annotations

from airflow_provider_deltacc.advisor.findings import FindingLevel
from airflow_provider_deltacc.advisor.pairs import Candidate
from airflow_provider_deltacc.advisor.scopes import Scope
from airflow_provider_deltacc.advisor.tasks import TaskFacts
from airflow_provider_deltacc.contract.op_kinds import MAINTENANCE_KINDS, OpKind

_READERS = {OpKind.MERGE, OpKind.UPDATE, OpKind.DELETE, OpKind.OVERWRITE, OpKind.INSERT_SELECT}
#: What protects a liquid-clustered table, where pins cannot (no partitions; in OSS Delta clustering-column
#: predicates do not narrow conflicts: docs/clustering.md).
CLUSTERED_FIX = (
    "the table is liquid-clustered, so pinning cannot help (no partitions, and clustering-column predicates "
    "do not narrow conflicts in OSS Delta): land concurrent sources with staging_append_then_merge, keep "
    "write leases on so these writers take turns, or declare write windows"
)


def _pin(task: TaskFacts) -> str:
    if task.op is OpKind.MERGE:
        return (
            f"pin {task.task_id}: make the partition column a merge key (partition_pin='keyed') or pass "
            "partition_pin='auto', so it reads only its source's partitions"
        )
    return f"pin {task.task_id}: pass partition_values=[{{...}}] so it reads only the partitions it changes"


def _serialize(candidate: Candidate) -> str:
    a, b = candidate.a, candidate.b
    if candidate.kind == "self":
        if a.mapped:
            return (
                f"set max_active_tis_per_dag=1 on {a.task_id}, or give each mapped instance its own "
                "partitions (pinned), or set max_active_runs=1 on its DAG"
            )
        return f"set max_active_runs=1 on {a.dag_id} so two runs never write {candidate.table} at once"
    if candidate.kind == "same_run":
        return f"add a dependency: {a.task_id} >> {b.task_id}"
    return (
        f"schedule {a.dag_id} and {b.dag_id} apart, or make one wait for the other (an Asset the writer "
        "produces, or an ExternalTaskSensor)"
    )


def suggest(
    candidate: Candidate,
    level: FindingLevel,
    scope_a: Scope,
    scope_b: Scope,
    *,
    gated_pair: bool,
    clustered: bool = False,
) -> tuple[str, ...]:
    """Fixes for one judged pair, best first; empty when nothing needs fixing.

    :param candidate: the pair.
    :param level: its verdict.
    :param scope_a: the resolved scope of ``candidate.a``.
    :param scope_b: the resolved scope of ``candidate.b``.
    :param gated_pair: the maintenance gate keeps them apart (a gated OPTIMIZE and a writer with a lease,
        or two gated maintenance tasks).
    :param clustered: the table is liquid-clustered: pins cannot help, say what does.
    """
    if level is FindingLevel.CANNOT:
        return ()
    a, b = candidate.a, candidate.b
    ops = {a.op, b.op}
    fixes: list[str] = []
    if OpKind.VACUUM in ops:
        vacuum = a if a.op is OpKind.VACUUM else b
        fixes.append(
            "keep retention_hours at or above the table's delta.deletedFileRetentionDuration (168 h by "
            "default) with force=False"
            + (
                ""
                if vacuum.gated
                else "; run VACUUM with DeltaVacuumOperator or table_maintenance, which "
                "wait until no writer holds a lease"
            )
        )
        fixes.append(_serialize(candidate))
        return tuple(fixes)
    if OpKind.SCHEMA_CHANGE in ops:
        fixes.append("run the schema change alone: " + _serialize(candidate) + " (pinning cannot help)")
        return tuple(fixes)
    if ops & MAINTENANCE_KINDS:
        maintenance = a if a.op in MAINTENANCE_KINDS else b
        writer = b if maintenance is a else a
        if gated_pair:
            fixes.append(
                f"already gated: {maintenance.task_id} waits for the other's lease; keep both on one lease "
                "store, and declare write_windows for writers outside Airflow"
            )
        elif not maintenance.gated:
            fixes.append(
                f"move {maintenance.task_id} into a write window: use DeltaOptimizeOperator or "
                "table_maintenance (gated maintenance) with write_windows for the writers"
            )
        elif not writer.uses_lease:
            fixes.append(
                f"{writer.task_id} has use_write_lease=False, so the gate cannot see it: turn the lease on, "
                f"or declare its write_windows on {maintenance.task_id}"
            )
        else:
            fixes.append(
                f"declare the writers' write_windows on {maintenance.task_id}, or give it partition_values "
                "disjoint from theirs"
            )
    if clustered and ops & _READERS:
        fixes.append(CLUSTERED_FIX)
    for task, scope in ((a, scope_a), (b, scope_b)):
        if clustered:
            break
        if task.op in _READERS and scope.kind == "whole" and candidate.kind != "self":
            fixes.append(_pin(task))
            break
    merges = [t for t in (a, b) if t.op is OpKind.MERGE]
    staging = candidate.kind != "self" or a.mapped
    if merges and staging and ops <= {OpKind.MERGE, OpKind.BLIND_APPEND} and candidate.kind != "same_run":
        fixes.append(
            f"use staging_append_then_merge for {candidate.table}: blind appends into a staging table "
            "never conflict, and one MERGE has nobody to conflict with"
        )
    elif merges and staging and ops <= {OpKind.MERGE, OpKind.BLIND_APPEND}:
        fixes.append(
            "use staging_append_then_merge: land the sources as blind appends and run one pinned MERGE"
        )
    fixes.append(_serialize(candidate))
    return tuple(dict.fromkeys(fixes))
