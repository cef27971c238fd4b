"""One sentence per conflict kind on how to stop the conflict from happening."""

from __future__ import annotations

from airflow_provider_deltacc.occ.kinds import ConflictKind

ADVICE: dict[ConflictKind, str] = {
    ConflictKind.APPEND: (
        "pin the target partitions with literal predicates in MERGE ON / UPDATE / DELETE conditions "
        "(or stage appends in a separate table and merge them in one writer); on an unpartitioned table "
        "any concurrent write, even a blind append, conflicts with DML."
    ),
    ConflictKind.DELETE_READ: (
        "keep DML and OPTIMIZE off the same partitions at the same time: pin partitions in the "
        "conditions and schedule OPTIMIZE outside the write windows."
    ),
    ConflictKind.DELETE_DELETE: (
        "do not let two DELETE/UPDATE/MERGE or two OPTIMIZE runs rewrite the same partitions at once; "
        "serialise them with a write window or pin disjoint partitions."
    ),
    ConflictKind.METADATA_CHANGED: (
        "run schema changes (ALTER TABLE, mergeSchema, overwriteSchema) and table property changes "
        "outside the write windows, and never from two writers at once."
    ),
    ConflictKind.PROTOCOL_CHANGED: (
        "create the table (and enable table features) once, before any concurrent writer starts; "
        "never upgrade or drop table features while writers are running."
    ),
    ConflictKind.CONCURRENT_TRANSACTION: (
        "never run two writers with the same txn app id at once (a zombie task plus its retry, or two "
        "streams on one checkpoint), and give each pipeline its own app id."
    ),
    ConflictKind.CONCURRENT_WRITE: (
        "do not run CLONE, CONVERT TO DELTA or RESTORE against a table while other writers commit to it."
    ),
    ConflictKind.MAX_COMMIT_ATTEMPTS: (
        "too many writers commit to this table at once: batch small writes (staging-append-then-merge) "
        "or spread the writers out in time."
    ),
}
