"""How to stop a conflict from happening: one sentence per conflict kind, fitted to the write that lost.

Every text that gives advice (the commit loop's conflict lines, the operator's, the retry policy's reason,
the UI) asks :func:`advice_for`, so a conflict gets the same advice wherever it is read.
"""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind

ADVICE: dict[ConflictKind, str] = {
    ConflictKind.APPEND: (
        "Pin the target partitions with literal predicates in MERGE ON / UPDATE / DELETE conditions "
        "(or stage appends in a separate table and merge them in one writer); on an unpartitioned or "
        "liquid-clustered table (clustering-column predicates do not narrow conflicts in open-source "
        "Delta) any concurrent write, even a blind append, conflicts with DML: stage the writes, or let "
        "write leases take turns."
    ),
    ConflictKind.DELETE_READ: (
        "Keep DML and OPTIMIZE off the same partitions at the same time: pin partitions in the "
        "conditions and schedule OPTIMIZE outside the write windows."
    ),
    ConflictKind.DELETE_DELETE: (
        "Do not let two DELETE/UPDATE/MERGE or two OPTIMIZE runs rewrite the same partitions at once; "
        "serialise them with a write window or pin disjoint partitions."
    ),
    ConflictKind.METADATA_CHANGED: (
        "Run schema changes (ALTER TABLE, mergeSchema, overwriteSchema) and table property changes "
        "outside the write windows, and never from two writers at once."
    ),
    ConflictKind.PROTOCOL_CHANGED: (
        "Create the table (and enable table features) once, before any concurrent writer starts; "
        "never upgrade or drop table features while writers are running."
    ),
    ConflictKind.CONCURRENT_TRANSACTION: (
        "Never run two writers with the same txn app id at once (a zombie task plus its retry, or two "
        "streams on one checkpoint), and give each pipeline its own app id."
    ),
    ConflictKind.CONCURRENT_WRITE: (
        "Do not run CLONE, CONVERT TO DELTA or RESTORE against a table while other writers commit to it."
    ),
    ConflictKind.MAX_COMMIT_ATTEMPTS: (
        "Too many writers commit to this table at once: batch small writes (staging-append-then-merge) "
        "or spread the writers out in time."
    ),
}

#: The kinds a write that already pins its partitions can still meet, when the winner touched the same
#: partitions: pinning is done, so the advice is about the other writer. Kept short: Airflow stores at most
#: 500 characters of a retry reason.
_PINNED_ADVICE: dict[ConflictKind, str] = {
    ConflictKind.APPEND: (
        "This write is already pinned to its partitions ({columns}); the winner added files to one it "
        "reads{where}. Give concurrent writers disjoint partitions, or run them one after another."
    ),
    ConflictKind.DELETE_READ: (
        "This write is already pinned to its partitions ({columns}); the winner removed files it "
        "read{where}. Keep other DML and OPTIMIZE off these partitions while it runs."
    ),
    ConflictKind.DELETE_DELETE: (
        "This write is already pinned to its partitions ({columns}); the winner rewrote the same "
        "files{where}. Run the writers of a partition one after another, or give them disjoint partitions."
    ),
}


def advice_for(conflict: Conflict, *, pinned_columns: Sequence[str] = ()) -> str:
    """The advice for ``conflict``, one or two sentences starting with a capital.

    :param conflict: the classified conflict.
    :param pinned_columns: the partition columns the losing write pinned its condition to (empty when it
        was not pinned): a pinned write that still conflicted gets advice about the other writer instead of
        "pin the target partitions".
    """
    pinned = _PINNED_ADVICE.get(conflict.kind) if pinned_columns else None
    if pinned is None:
        return ADVICE[conflict.kind]
    where = f" ({conflict.partition})" if conflict.partition else ""
    return pinned.format(columns=", ".join(pinned_columns), where=where)
