"""What identifies each conflict kind: class names, error classes and message texts, as data.

This is the one place the classifier's tokens live. Sources (read, not copied): delta-io/delta
``delta-error-classes.json`` at v2.4.0, v3.3.2, v4.0.0, v4.1.0, v4.4.0 and ``DeltaErrors.scala``;
delta-io/delta-rs ``crates/core/src/kernel/transaction/{conflict_checker,mod}.rs`` and ``errors.rs``.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_deltacc.contract.conflict import ConflictKind

#: JVM packages that hold Delta's conflict classes (the second is the pre-1.0 compatibility copy).
DELTA_JVM_PACKAGES: tuple[str, ...] = ("io.delta.exceptions", "org.apache.spark.sql.delta")

#: Prefix delta-rs puts in front of every commit conflict (``TransactionError::CommitConflict``).
DELTA_RS_PREFIX = r"Failed to commit transaction: "


@dataclass(frozen=True)
class KindSignature:
    """How one conflict kind shows itself.

    :param kind: the conflict kind.
    :param class_name: Delta's simple class name, the same on the JVM and in Python; None if the kind has
        no class of its own.
    :param error_class: Delta's error class without the ``.WITH_PARTITION_HINT``-style subclass.
    :param delta_rs: regexes for the delta-rs ``CommitFailedError``/``DeltaError`` text.
    :param phrases: regexes for Delta Spark message sentences that carry neither a class name nor an
        error class (Delta 2.4 messages, the DomainMetadata variant, a stripped >= 4.1 message).
    """

    kind: ConflictKind
    class_name: str | None
    error_class: str
    delta_rs: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()


SIGNATURES: tuple[KindSignature, ...] = (
    KindSignature(
        ConflictKind.APPEND,
        "ConcurrentAppendException",
        "DELTA_CONCURRENT_APPEND",
        delta_rs=(DELTA_RS_PREFIX + r"Commit failed: a concurrent transactions? added new data",),
        phrases=(
            r"Files were added to (?:partition \[[^\]\n]*\]|the root of the table) by a concurrent update",
            r"Transaction conflict detected[.,] a concurrent [^\n]+? added data to table ",
        ),
    ),
    KindSignature(
        ConflictKind.DELETE_READ,
        "ConcurrentDeleteReadException",
        "DELTA_CONCURRENT_DELETE_READ",
        delta_rs=(
            DELTA_RS_PREFIX + r"Commit failed: a concurrent transaction deleted data this operation read",
        ),
        phrases=(
            r"attempted to read one or more files that were deleted \(for example [^\n]*?\) by a",
            r"Transaction conflict detected[.,] a concurrent [^\n]+? deleted data from table [^\n]+? "
            r"that this transaction read\.",
        ),
    ),
    KindSignature(
        ConflictKind.DELETE_DELETE,
        "ConcurrentDeleteDeleteException",
        "DELTA_CONCURRENT_DELETE_DELETE",
        delta_rs=(
            DELTA_RS_PREFIX
            + r"Commit failed: a concurrent transaction deleted the same data your transaction deletes",
        ),
        phrases=(
            r"attempted to delete one or more files that were deleted \(for example [^\n]*?\) by a",
            r"Transaction conflict detected[.,] a concurrent [^\n]+? deleted data from table [^\n]+? "
            r"that this transaction attempted to delete\.",
        ),
    ),
    KindSignature(
        ConflictKind.METADATA_CHANGED,
        "MetadataChangedException",
        "DELTA_METADATA_CHANGED",
        delta_rs=(DELTA_RS_PREFIX + r"Metadata changed since last commit\.",),
        phrases=(r"The metadata of the Delta table (?:[^\n]+? )?has been changed by a concurrent update",),
    ),
    # MERGE checks, as its transaction starts, that the table's schema is still the one it was analysed
    # against; a concurrent ALTER TABLE in between fails it here instead of at commit. It is the same
    # conflict and the same remedy: re-plan from a fresh snapshot.
    KindSignature(
        ConflictKind.METADATA_CHANGED,
        None,
        "DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS",
        phrases=(r"The schema of your Delta table has changed in an incompatible way since your DataFrame",),
    ),
    KindSignature(
        ConflictKind.PROTOCOL_CHANGED,
        "ProtocolChangedException",
        "DELTA_PROTOCOL_CHANGED",
        delta_rs=(
            DELTA_RS_PREFIX + r"Protocol changed since last commit:",
            # delta-rs before #3513 (python-v1.4) surfaced a lost table-creation race as this
            # DeltaError; later versions run the conflict checker and say "Protocol changed".
            r"Delta transaction failed, version 0 already exists\.",
        ),
        phrases=(r"The protocol version of the Delta table has been changed by a concurrent update",),
    ),
    KindSignature(
        ConflictKind.CONCURRENT_TRANSACTION,
        "ConcurrentTransactionException",
        "DELTA_CONCURRENT_TRANSACTION",
        delta_rs=(DELTA_RS_PREFIX + r"Concurrent transaction failed\.",),
        phrases=(
            r"multiple streaming queries are using the same checkpoint to write into this table",
            # ConflictChecker.checkIfDomainMetadataConflict throws without an error-class prefix.
            r"A conflicting metadata domain \S+ is added\.",
        ),
    ),
    KindSignature(
        ConflictKind.CONCURRENT_WRITE,
        "ConcurrentWriteException",
        "DELTA_CONCURRENT_WRITE",
        phrases=(r"A concurrent transaction has written new data since the current transaction read the",),
    ),
    KindSignature(
        ConflictKind.MAX_COMMIT_ATTEMPTS,
        None,
        "DELTA_MAX_COMMIT_RETRIES_EXCEEDED",
        # delta-rs MaxCommitAttempts prints only the retry count.
        delta_rs=(r"^[ \t]*" + DELTA_RS_PREFIX + r"\d+[ \t]*$",),
        phrases=(r"This commit has failed as it has been tried \d+ times but did not succeed",),
    ),
)

#: Texts that mark a ProtocolChanged conflict as two writers creating the same table.
CREATE_RACE_PHRASES: tuple[str, ...] = (
    r"multiple writers are writing to an empty directory",
    r"Delta transaction failed, version 0 already exists\.",
)

BY_CLASS_NAME: dict[str, ConflictKind] = {s.class_name: s.kind for s in SIGNATURES if s.class_name}
BY_ERROR_CLASS: dict[str, ConflictKind] = {s.error_class: s.kind for s in SIGNATURES}
