"""Judge one pair with the conflict matrix: resolve both scopes, decide the traits, word the reason.

Partition overlap decides the traits :func:`~airflow_provider_deltacc.conflict_matrix.can_conflict` sees:
a task whose partitions are disjoint from the other's is pinned, per side (``pinned_a``/``pinned_b``: it
cannot lose a file-level conflict, whatever the other's pinning); partitions known to be shared are
``same_files`` (a file-level "can" becomes "will", except for OPTIMIZE, which may find nothing to compact);
partitions known only at run time leave the seed cell's "can".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from airflow_provider_deltacc.advisor.findings import Finding, FindingLevel
from airflow_provider_deltacc.advisor.fixes import suggest
from airflow_provider_deltacc.advisor.pairs import Candidate
from airflow_provider_deltacc.advisor.scopes import (
    WHOLE,
    Overlap,
    Scope,
    literal_scope,
    overlap,
    project_rows,
)
from airflow_provider_deltacc.advisor.tasks import MERGE_AUTO, TaskFacts
from airflow_provider_deltacc.conflict_matrix import (
    EXCEPTION_NAMES,
    EngineProfile,
    Hazard,
    TableTraits,
    Verdict,
    can_conflict,
)
from airflow_provider_deltacc.conflict_matrix import Level as MatrixLevel
from airflow_provider_deltacc.conflict_matrix.ops import exposure
from airflow_provider_deltacc.conflict_matrix.profiles import PROFILE_SPECS
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.op_kinds import MAINTENANCE_KINDS, OpKind

_OPTIMIZES = {OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER}
_ADDERS = {OpKind.BLIND_APPEND, OpKind.INSERT_SELECT}
#: Operations whose way of failing differs from their partner's: their reasons get one sentence per side.
_ONE_SIDED = {*_OPTIMIZES, *_ADDERS, OpKind.SCHEMA_CHANGE}


@dataclass(frozen=True)
class TableContext:
    """What the advisor knows about one table.

    :param table: the table.
    :param partition_columns: its partition columns, as far as known.
    :param partitioned: True/False when read from the table's log, None when unknown.
    :param profile: the engine profile (from the tasks' arguments; OSS Delta by default).
    :param traits: the table traits (from the tasks' arguments).
    """

    table: str
    partition_columns: tuple[str, ...] = ()
    partitioned: bool | None = None
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE
    traits: TableTraits = field(default_factory=TableTraits)


@lru_cache(maxsize=4096)
def _verdict(
    a: OpKind, b: OpKind, profile: EngineProfile, traits: TableTraits, pins: tuple[bool, bool]
) -> Verdict:
    return can_conflict(a, b, profile=profile, traits=traits, pinned_a=pins[0], pinned_b=pins[1])


def resolve_scope(task: TaskFacts, context: TableContext) -> tuple[Scope, tuple[str, ...]]:
    """The task's scope once the table's partition columns are known, and what that assumes."""
    scope, columns = task.scope, context.partition_columns
    if context.partitioned is False and task.op is not OpKind.VACUUM:
        return WHOLE, ("the table is not partitioned: every writer touches the same files",)
    if task.op is OpKind.MERGE and scope.kind in ("rows", "source"):
        return _merge_scope(task, scope, columns)
    if scope.kind == "rows":
        projected = project_rows(scope.specs, columns)
        return (literal_scope(projected), ()) if projected else (scope, ())
    return scope, ()


def _merge_scope(task: TaskFacts, scope: Scope, columns: Sequence[str]) -> tuple[Scope, tuple[str, ...]]:
    if scope.columns:
        pinned = list(scope.columns)
    elif not columns:
        note = f"{task.task_id}: partition columns unknown, so whether its pin narrows it is not known"
        return Scope("unknown", note=note), (note,)
    elif task.label == MERGE_AUTO:
        pinned = list(columns)
    else:
        keys = {k.lower() for k in task.merge_keys}
        pinned = [c for c in columns if c.lower() in keys]
        if not pinned:
            note = f"no merge key of {task.task_id} is a partition column ({', '.join(columns)}): not pinned"
            return WHOLE, (note,)
    if scope.kind == "rows":
        projected = project_rows(scope.specs, pinned)
        if projected:
            return literal_scope(projected), ()
    return Scope("source", columns=tuple(pinned)), ()


#: Added to the reason of a conflicting pair on a liquid-clustered table (measured: docs/clustering.md).
CLUSTERED_NOTE = (
    "The table is liquid-clustered: it has no partitions to pin, and in open-source Delta predicates on its "
    "clustering columns do not narrow conflicts, so any pin these tasks name keeps nothing apart."
)


@lru_cache(maxsize=1024)
def _traits(base: TableTraits, shared: Overlap, ops: frozenset[OpKind]) -> TableTraits:
    if base.clustered:  # no partitions: nothing is pinned, whatever the tasks name
        return replace(base, pinned=False, same_files=False)
    if shared == "no":
        return replace(base, partitioned=True, pinned=False, same_files=False)
    certain = shared == "yes" and not ops & MAINTENANCE_KINDS
    return replace(base, pinned=False, same_files=certain)


def _names(kinds: Sequence[ConflictKind]) -> str:
    names = [EXCEPTION_NAMES[k] for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _reads(task: TaskFacts, scope: str) -> str:
    if task.op in _OPTIMIZES:
        return f"compacts {scope}"
    if task.op is OpKind.SCHEMA_CHANGE:
        return "commits against the table's current metadata"
    if task.op is OpKind.BLIND_APPEND:
        return f"adds files to {scope} against the table's current metadata"
    return f"reads {scope}"


def _acts(task: TaskFacts, scope: str) -> str:
    if task.op is OpKind.SCHEMA_CHANGE:
        return "changes the table's metadata"
    if task.op in _ADDERS:
        return f"adds files to {scope}"
    if task.op in _OPTIMIZES:
        return f"rewrites (compacts) files in {scope}"
    return f"rewrites files in {scope}"


class _Namer:
    def __init__(self, candidate: Candidate) -> None:
        self.same_dag = candidate.a.dag_id == candidate.b.dag_id

    def __call__(self, task: TaskFacts) -> str:
        return task.task_id if self.same_dag else task.key


def _conflict_reason(
    candidate: Candidate, verdict: Verdict, level: FindingLevel, scopes: dict[int, str], shared: Overlap
) -> tuple[str, tuple[str, ...], tuple[ConflictKind, ...]]:
    a, b = candidate.a, candidate.b
    name = _Namer(candidate)
    spec = PROFILE_SPECS[verdict.profile]
    when = " if they touch the same partitions" if level is FindingLevel.CAN and shared == "maybe" else ""
    verb = "will raise" if level is FindingLevel.WILL else "can raise"
    if candidate.kind == "self":
        kinds = verdict.exceptions
        text = (
            f"Two concurrent {'instances' if a.mapped else 'runs'} of {name(a)} ({a.label}) each "
            f"{_reads(a, scopes[0])}: whichever commits second {verb.split()[0]} fail with "
            f"{_names(kinds)}{when}."
        )
        return text, (a.key,), kinds
    if a.op in verdict.losers and b.op in verdict.losers and not {a.op, b.op} & _ONE_SIDED:
        text = (
            f"{name(a)} ({a.label}) reads {scopes[0]} and {name(b)} ({b.label}) reads {scopes[1]}, and both "
            f"rewrite files there: whichever commits second {verb.split()[0]} fail with "
            f"{_names(verdict.exceptions)}{when}."
        )
        return text, (a.key, b.key), verdict.exceptions
    sentences: list[str] = []
    losers: list[str] = []
    all_kinds: list[ConflictKind] = []
    pairs = ((a, b, scopes[0], scopes[1]), (b, a, scopes[1], scopes[0]))
    for loser, winner, loser_scope, winner_scope in pairs:
        if loser.op not in verdict.losers:
            continue
        exposed = exposure(loser.op, winner.op, serializable=spec.serializable, databricks=spec.databricks)
        kinds = tuple(k for k in exposed if k in verdict.exceptions) or verdict.exceptions
        sentences.append(
            f"{name(loser)} ({loser.label}) {_reads(loser, loser_scope)}; a concurrent {winner.label} by "
            f"{name(winner)} {_acts(winner, winner_scope)}, so it {verb} {_names(kinds)} in {name(loser)} "
            f"when {name(winner)} commits while {name(loser)} is running{when}."
        )
        losers.append(loser.key)
        all_kinds += kinds
    ordered = tuple(k for k in ConflictKind if k in all_kinds)
    return " ".join(sentences) or verdict.reason, tuple(losers), ordered


def _safe_reason(candidate: Candidate, verdict: Verdict, scopes: dict[int, str], shared: Overlap) -> str:
    a, b = candidate.a, candidate.b
    name = _Namer(candidate)
    if shared == "no" and "disjoint_partition_pins" in verdict.rules:
        return (
            f"{name(a)} ({a.label}) touches only {scopes[0]} and {name(b)} ({b.label}) only {scopes[1]}: "
            "disjoint partitions, so neither can fail the other."
        )
    return f"{name(a)} ({a.label}) and {name(b)} ({b.label}): {verdict.reason}"


def _hazard_reason(candidate: Candidate) -> str:
    a, b = candidate.a, candidate.b
    name = _Namer(candidate)
    vacuum, other = (a, b) if a.op is OpKind.VACUUM else (b, a)
    if vacuum is other:
        return (
            f"Two runs of {name(vacuum)} (VACUUM) at once: harmless for the data, but the listing is wasted."
        )
    retention = (
        f"retention {vacuum.retention_hours:g} h"
        if vacuum.retention_hours is not None
        else "the table's retention (168 h unless delta.deletedFileRetentionDuration says otherwise)"
    )
    forced = ", force=True" if vacuum.force else ""
    text = (
        f"{name(vacuum)} (VACUUM with {retention}{forced}) deletes unreferenced files older than the "
        f"retention, including files {name(other)} ({other.label}) has written and not yet committed if "
        f"{name(other)} runs longer than that: its commit then fails on missing files. No conflict "
        "exception warns about it."
    )
    if vacuum.gated:
        text += f" {name(vacuum)} is gated: it waits until no writer holds a write lease on the table."
    return text


#: Resolved scopes per task for one table: id(task) -> (scope, assumptions, description).
ScopeMemo = dict[int, tuple[Scope, tuple[str, ...], str]]


def _resolved(task: TaskFacts, context: TableContext, memo: ScopeMemo) -> tuple[Scope, tuple[str, ...], str]:
    found = memo.get(id(task))
    if found is None:
        scope, notes = resolve_scope(task, context)
        found = memo[id(task)] = (scope, notes, scope.describe(context.partition_columns))
    return found


def _mitigation(a: TaskFacts, b: TaskFacts) -> str:
    """How the maintenance gate keeps the two apart, or "" when it does not."""
    if a.gated and b.gated:
        if a is b:
            return f"Mitigated by maintenance leases: a second {a.task_id} waits for the first one's lease."
        return f"Mitigated by maintenance leases: {a.task_id} and {b.task_id} wait for each other's lease."
    maintenance, writer = (a, b) if a.gated else (b, a)
    if not maintenance.gated or maintenance.op not in _OPTIMIZES or writer.op in MAINTENANCE_KINDS:
        return ""
    if not writer.uses_lease:
        return ""
    return (
        f"Mitigated by the gate: {maintenance.task_id} waits for {writer.task_id}'s write lease before it "
        f"starts, and {writer.task_id} waits (up to maintenance_wait_timeout) for {maintenance.task_id}'s."
    )


def judge(candidate: Candidate, context: TableContext, memo: ScopeMemo | None = None) -> Finding:
    """Judge one pair.

    :param candidate: two tasks that can run at the same time on one table.
    :param context: what is known about the table.
    :param memo: resolved scopes of this table's tasks, shared between calls (pass one dict per table).
    """
    memo = {} if memo is None else memo
    a, b = candidate.a, candidate.b
    scope_a, notes_a, text_a = _resolved(a, context, memo)
    scope_b, notes_b, text_b = _resolved(b, context, memo)
    if candidate.kind == "self":
        shared: Overlap = "maybe" if scope_a.kind in ("source", "unknown") else "yes"
    else:
        shared = overlap(scope_a, scope_b, context.partition_columns)
    traits = _traits(context.traits, shared, frozenset({a.op, b.op}))
    # One scope per task stands for what it reads and what it writes: disjoint scopes pin both sides.
    pinned = shared == "no"
    verdict = _verdict(a.op, b.op, context.profile, traits, (pinned, pinned))
    if verdict.level is MatrixLevel.WILL:
        level = FindingLevel.WILL
    elif verdict.level is MatrixLevel.CAN:
        level = FindingLevel.CAN
    else:
        level = FindingLevel.HAZARD if verdict.hazard is not Hazard.NONE else FindingLevel.CANNOT
    scopes = {0: text_a, 1: text_b}
    losers: tuple[str, ...] = ()
    kinds: tuple[ConflictKind, ...] = ()
    if level in (FindingLevel.WILL, FindingLevel.CAN):
        reason, losers, kinds = _conflict_reason(candidate, verdict, level, scopes, shared)
    elif level is FindingLevel.HAZARD:
        reason = _hazard_reason(candidate)
    else:
        reason = _safe_reason(candidate, verdict, scopes, shared)
    if context.traits.clustered and level in (FindingLevel.WILL, FindingLevel.CAN):
        reason += " " + CLUSTERED_NOTE
    mitigation = _mitigation(a, b)
    if mitigation and level in (FindingLevel.WILL, FindingLevel.CAN):
        reason += " " + mitigation
    assumptions = tuple(dict.fromkeys((*a.notes, *notes_a, *b.notes, *notes_b)))
    if assumptions and level is not FindingLevel.CANNOT:
        reason += " Assumes the worst: " + "; ".join(assumptions) + "."
    return Finding(
        level=level,
        table=candidate.table,
        task_a=a.key,
        task_b=b.key,
        op_a=a.label,
        op_b=b.label,
        kind_a=a.op,
        kind_b=b.op,
        exceptions=tuple(EXCEPTION_NAMES[k] for k in kinds),
        losers=losers,
        reason=reason,
        fixes=suggest(
            candidate,
            level,
            scope_a,
            scope_b,
            gated_pair=bool(mitigation),
            clustered=context.traits.clustered,
        ),
        timing=candidate.why,
        assumptions=assumptions,
        verdict=verdict,
    )
