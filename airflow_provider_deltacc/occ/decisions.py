"""Whether a conflict is worth another attempt, by conflict kind and by the class of the operation.

A retry always re-plans: the work re-reads a fresh snapshot and redoes the whole read-modify-write,
because Delta's own commit retry has already absorbed every race it could resolve.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.operations import OperationClass

#: How many times a METADATA_CHANGED conflict may be re-planned (reference section 6: at most once).
METADATA_REPLANS = 1


class Rule(StrEnum):
    """The answer a decision-table cell gives."""

    RETRY = "retry"
    REPLAN_ONCE = "re-plan once"
    IF_OWN_TXN = "retry if we own the txn identity"
    FAIL = "fail"


@dataclass(frozen=True)
class ConflictDecision:
    """Whether to try again, and why.

    :param retry: True to run the work again from a fresh snapshot.
    :param reason: a sentence for the log and the task instance.
    :param max_replans: a per-kind limit on re-plans stricter than the retry policy, or None.
    """

    retry: bool
    reason: str
    max_replans: int | None


_ALL = tuple(OperationClass)

_RETRY = {
    ConflictKind.APPEND: "new files landed in data this operation read; a re-run reads them",
    ConflictKind.DELETE_READ: "a file this operation read was rewritten; a re-run reads the new files",
    ConflictKind.DELETE_DELETE: "a file this operation removes was already removed; a re-run re-evaluates",
    ConflictKind.MAX_COMMIT_ATTEMPTS: "pure commit contention; back off and try again",
}
_METADATA_REPLAN = "the table's metadata changed; the re-run plans against the new schema and properties"
_PROTOCOL_FAIL = (
    "the table protocol changed (concurrent create, feature upgrade or drop); a retry could turn a create "
    "into a write into someone else's table"
)
_TXN_IF_OWNED = (
    "another writer committed with the same txn app id; with our own idempotent identity the re-run is "
    "skipped as a duplicate, without it a retry could duplicate or drop data"
)

#: The whole decision table: kind -> operation class -> (rule, reason).
DECISION_TABLE: dict[ConflictKind, dict[OperationClass, tuple[Rule, str]]] = {
    **{kind: dict.fromkeys(_ALL, (Rule.RETRY, reason)) for kind, reason in _RETRY.items()},
    ConflictKind.METADATA_CHANGED: {
        **dict.fromkeys(_ALL, (Rule.REPLAN_ONCE, _METADATA_REPLAN)),
        OperationClass.SCHEMA_CHANGING: (
            Rule.FAIL,
            "this operation changes the schema too; retrying over another schema change could lose it",
        ),
    },
    ConflictKind.PROTOCOL_CHANGED: dict.fromkeys(_ALL, (Rule.FAIL, _PROTOCOL_FAIL)),
    ConflictKind.CONCURRENT_TRANSACTION: dict.fromkeys(_ALL, (Rule.IF_OWN_TXN, _TXN_IF_OWNED)),
    # Delta raises ConcurrentWriteException from commitLarge (CLONE, CONVERT, RESTORE) and from a lost
    # filesystem-to-coordinated-commits upgrade. Our operations never call commitLarge, so for them it
    # means the table was being upgraded or restored underneath us. Re-running a blind append or a
    # compaction from a fresh snapshot is harmless; a read-modify-write or a schema change may have been
    # planned against data that a RESTORE has just rolled back, which is a business decision, not ours.
    ConflictKind.CONCURRENT_WRITE: {
        OperationClass.BLIND_APPEND: (
            Rule.RETRY,
            "a large commit (upgrade, CLONE, CONVERT) won the race; a blind append is safe to re-run",
        ),
        OperationClass.MAINTENANCE: (
            Rule.RETRY,
            "a large commit (upgrade, CLONE, CONVERT) won the race; maintenance is idempotent",
        ),
        OperationClass.READ_MODIFY_WRITE: (
            Rule.FAIL,
            "a large commit (RESTORE, CLONE, CONVERT, upgrade) replaced the table under a read-modify-write; "
            "decide whether the operation still applies",
        ),
        OperationClass.SCHEMA_CHANGING: (
            Rule.FAIL,
            "a large commit (RESTORE, CLONE, CONVERT, upgrade) replaced the table under a schema change; "
            "decide whether the change still applies",
        ),
    },
}


def decide_conflict(
    kind: ConflictKind,
    op_class: OperationClass,
    *,
    owns_txn_identity: bool,
    metadata_replans_used: int = 0,
) -> ConflictDecision:
    """Decide whether a conflict of ``kind`` on an operation of ``op_class`` deserves another attempt.

    The retry policy still bounds the attempts and the total time; this only says yes or no.

    :param kind: the conflict kind.
    :param op_class: what the failed operation does.
    :param owns_txn_identity: True when the operation writes with a txn app id/version that this
        provider derived and owns, so a re-run after a duplicate commit is skipped, not re-applied.
    :param metadata_replans_used: how many METADATA_CHANGED re-plans this operation already made.
    """
    rule, reason = DECISION_TABLE[kind][op_class]
    if rule is Rule.RETRY:
        return ConflictDecision(True, reason, None)
    if rule is Rule.REPLAN_ONCE:
        if metadata_replans_used < METADATA_REPLANS:
            return ConflictDecision(True, reason, METADATA_REPLANS)
        return ConflictDecision(
            False,
            f"the table's metadata changed again after {metadata_replans_used} re-plan(s); "
            "stop and re-check the schema",
            METADATA_REPLANS,
        )
    if rule is Rule.IF_OWN_TXN:
        if owns_txn_identity:
            return ConflictDecision(True, reason, None)
        return ConflictDecision(
            False,
            "another writer committed with the same txn app id and this operation does not own an "
            "idempotent txn identity; a retry could duplicate or drop data",
            None,
        )
    return ConflictDecision(False, reason, None)


def decision_table_markdown() -> str:
    """Render the decision table as Markdown: one row per kind, one column per operation class, then why."""
    ops = list(OperationClass)
    lines = [
        "| conflict | " + " | ".join(f"`{op.name}`" for op in ops) + " |",
        "|---|" + "---|" * len(ops),
    ]
    for kind in ConflictKind:
        row = DECISION_TABLE[kind]
        lines.append(f"| `{kind.name}` | " + " | ".join(row[op][0].value for op in ops) + " |")
    lines.append("")
    for kind in ConflictKind:
        groups: dict[tuple[Rule, str], list[OperationClass]] = {}
        for op in ops:
            groups.setdefault(DECISION_TABLE[kind][op], []).append(op)
        if len(groups) == 1:
            ((rule, reason),) = groups
            lines.append(f"- `{kind.name}`: **{rule.value}**: {reason}.")
            continue
        lines.append(f"- `{kind.name}`:")
        for (rule, reason), members in groups.items():
            names = ", ".join(f"`{op.name}`" for op in members)
            lines.append(f"  - {names}: **{rule.value}**: {reason}.")
    return "\n".join(lines) + "\n"
