"""Is it safe for several Spark writers to commit to this table at once? Decided from its path and settings.

Delta's optimistic concurrency needs *mutual exclusion* when a commit file ``_delta_log/<v>.json`` is created:
of two writers racing for version ``v`` exactly one may win. Most storage gives that, S3 needs help.

On ``s3://``, ``s3a://``, ``s3n://`` the default ``S3SingleDriverLogStore`` only excludes writers *inside one
driver*; two drivers (two Airflow tasks) can both write version ``v`` and one commit is silently lost.
Multi-cluster writes need ``spark.delta.logStore.<scheme>.impl`` (or the older ``spark.delta.logStore.class``)
set to ``io.delta.storage.S3DynamoDBLogStore`` or the provider's put-if-absent log store. ``gs://``
(GCSLogStore: preconditions), ``abfs[s]://``, ``wasb[s]://``, ``adl://`` (Azure log stores), ``hdfs://`` and
local paths (atomic rename) are safe. Catalog names and other schemes are not judged (the location is
unknown, or no rule is known).

Pure Python (no Spark, no Airflow): the operators decide with it before submitting, and the Spark job checks
it again against the session's effective settings. What only the worker judges (delta-rs writers, Spark and
delta-rs together, an S3 endpoint without conditional writes) is in
:mod:`airflow_provider_deltacc.object_storage.writer_safety`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from airflow_provider_deltacc.contract.table import Table

DYNAMODB_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"
SINGLE_DRIVER_LOG_STORE = "io.delta.storage.S3SingleDriverLogStore"
#: The provider's own S3 log store: commit files created put-if-absent (S3 conditional writes), see
#: :mod:`airflow_provider_deltacc.spark_jars.put_if_absent`.
PUT_IF_ABSENT_LOG_STORE = "io.deltacc.storage.S3PutIfAbsentLogStore"
LEGACY_LOG_STORE_CONF = "spark.delta.logStore.class"
#: The operator/env override that lets writers on unsafe storage run concurrently anyway.
OVERRIDE_ARGUMENT = "allow_unsafe_concurrent_writes"
OVERRIDE_ENV = "DELTACC_ALLOW_UNSAFE_CONCURRENT_WRITES"

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
#: Where Delta's own log store already gives mutual exclusion, and why.
SAFE_SCHEMES: dict[str, str] = {
    "file": "local path: Delta's HDFSLogStore creates commit files with an atomic rename",
    "hdfs": "HDFS: Delta's HDFSLogStore creates commit files with an atomic rename",
    "viewfs": "HDFS (viewfs): Delta's HDFSLogStore creates commit files with an atomic rename",
    "gs": "Google Cloud Storage: Delta's GCSLogStore creates commit files with a precondition",
    "abfs": "Azure Data Lake Gen2: Delta's AzureLogStore creates commit files with an atomic rename",
    "abfss": "Azure Data Lake Gen2: Delta's AzureLogStore creates commit files with an atomic rename",
    "wasb": "Azure Blob Storage: Delta's AzureLogStore creates commit files with an atomic rename",
    "wasbs": "Azure Blob Storage: Delta's AzureLogStore creates commit files with an atomic rename",
    "adl": "Azure Data Lake Gen1: Delta's AzureLogStore creates commit files with an atomic rename",
}
_TRUE = frozenset({"true", "1", "yes", "on"})


@dataclass(frozen=True)
class StorageSafety:
    """The verdict on concurrent writers for one table.

    :param table: the table as the task spelled it.
    :param scheme: its storage scheme (``s3a``, ``file``, ...), or ``catalog`` for a catalog name.
    :param engine: ``spark``, ``delta-rs`` or ``spark+delta-rs``.
    :param safe: True when concurrent writers cannot lose commits (or nothing is known against it).
    :param reason: why, in one sentence.
    :param setting: the setting that would make it safe (when unsafe and one exists).
    :param fix: what to do about it.
    :param log_store: the S3 log store the writers use, when it decides the verdict.
    """

    table: str
    scheme: str
    engine: str
    safe: bool
    reason: str
    setting: str | None = None
    fix: str | None = None
    log_store: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a plain dict (for reports)."""
        return asdict(self)

    def message(self) -> str:
        """One line for a log or an error: the table, the reason, the setting and the fix."""
        parts = [f"{self.table}: {self.reason}"]
        if self.setting:
            parts.append(f"missing setting: {self.setting}")
        if self.fix:
            parts.append(self.fix)
        return "; ".join(parts)


def is_truthy(value: Any) -> bool:
    """True for ``True`` and the strings ``true``/``1``/``yes``/``on`` (any case)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in _TRUE


def override_fix() -> str:
    """What to do about a Spark table on unsafe S3 storage: the DynamoDB log store, or the override."""
    return (
        f"set spark.delta.logStore.<scheme>.impl={DYNAMODB_LOG_STORE} (with its DynamoDB table) in the "
        f"operator's spark_conf or the cluster's Spark settings, or pass {OVERRIDE_ARGUMENT}=True "
        f"(or {OVERRIDE_ENV}=true) if only one writer ever commits to this table at a time"
    )


def spark_storage_safety(table: Table, spark_conf: Mapping[str, Any] | None = None) -> StorageSafety:
    """Whether Spark writers (in different drivers) can safely commit to ``table`` at the same time.

    :param table: the table.
    :param spark_conf: the effective Spark settings of the writers (operator ``spark_conf``, connection
        and cluster settings, as far as they are known).
    """
    conf = {str(k): str(v) for k, v in (spark_conf or {}).items()}
    scheme = table.scheme
    if scheme == "catalog":
        return StorageSafety(
            table.name,
            scheme,
            "spark",
            True,
            "a catalog table: its location is not known before Spark resolves it",
        )
    if scheme not in S3_SCHEMES:
        reason = SAFE_SCHEMES.get(scheme, f"{scheme}:// is not known to need a multi-writer log store")
        return StorageSafety(table.name, scheme, "spark", True, reason)
    key = f"spark.delta.logStore.{scheme}.impl"
    store = (conf.get(key) or conf.get(LEGACY_LOG_STORE_CONF) or "").strip()
    source = key if conf.get(key) else LEGACY_LOG_STORE_CONF
    if store == PUT_IF_ABSENT_LOG_STORE:
        return StorageSafety(
            table.name,
            scheme,
            "spark",
            True,
            f"{source}={PUT_IF_ABSENT_LOG_STORE}: commit files are created put-if-absent (S3 conditional "
            "writes), so of two writers racing for a version exactly one wins",
            log_store=PUT_IF_ABSENT_LOG_STORE,
        )
    if store == DYNAMODB_LOG_STORE:
        return StorageSafety(
            table.name,
            scheme,
            "spark",
            True,
            f"{source}={DYNAMODB_LOG_STORE}: commits are coordinated in DynamoDB",
        )
    if store and store != SINGLE_DRIVER_LOG_STORE:
        return StorageSafety(
            table.name,
            scheme,
            "spark",
            True,
            f"{source}={store}: a custom log store, trusted to give mutual exclusion",
        )
    return StorageSafety(
        table.name,
        scheme,
        "spark",
        False,
        f"{scheme}:// with Delta's single-driver S3 log store: two Spark drivers committing at once can "
        "silently overwrite each other's commit (data loss without an error)",
        setting=f"{key}={DYNAMODB_LOG_STORE}",
        fix=override_fix(),
        log_store=store or SINGLE_DRIVER_LOG_STORE,
    )
