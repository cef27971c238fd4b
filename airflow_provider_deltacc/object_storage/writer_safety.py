"""What the Airflow worker adds to the Spark verdict of
:mod:`airflow_provider_deltacc.contract.storage_safety` (a Spark driver never needs it, so it is not in the
driver's bundle):

* **An S3 endpoint without conditional writes**: the provider's put-if-absent log store is safe only where the
  store checks a create (:mod:`airflow_provider_deltacc.object_storage.conditional_writes` probes it);
  elsewhere the verdict turns unsafe (:func:`without_conditional_writes`).
* **delta-rs** (``deltalake`` >= 1.0) on ``s3://``/``s3a://``: commits with S3 conditional writes
  (put-if-absent); its DynamoDB locking provider was dropped in 1.0. Unsafe when
  ``AWS_S3_ALLOW_UNSAFE_RENAME`` is true, and on an S3-compatible endpoint (``AWS_ENDPOINT_URL``) unless
  ``conditional_put=etag`` says the store supports conditional writes.
* **Spark and delta-rs** on the same S3 table: never safe together, unless both create commit files
  put-if-absent; Spark's DynamoDB log store and delta-rs's conditional put do not exclude each other
  (delta-io/delta-rs discussion #4482).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from airflow_provider_deltacc.contract.storage_safety import (
    DYNAMODB_LOG_STORE,
    OVERRIDE_ARGUMENT,
    PUT_IF_ABSENT_LOG_STORE,
    S3_SCHEMES,
    SAFE_SCHEMES,
    StorageSafety,
    is_truthy,
    override_fix,
    spark_storage_safety,
)
from airflow_provider_deltacc.contract.table import Table


def without_conditional_writes(verdict: StorageSafety, endpoint: str, why: str) -> StorageSafety:
    """The verdict for writers whose put-if-absent log store meets a store that does not do conditional
    writes: unsafe, like Delta's single-driver log store (a create the store does not check overwrites).

    :param verdict: the verdict of
        :func:`~airflow_provider_deltacc.contract.storage_safety.spark_storage_safety` for the put-if-absent
        log store.
    :param endpoint: the S3 endpoint the probe asked.
    :param why: what the probe found.
    """
    return replace(
        verdict,
        safe=False,
        reason=f"the S3 endpoint {endpoint} does not do conditional writes ({why}), so the put-if-absent "
        "log store cannot keep two writers from overwriting each other's commit",
        setting=f"spark.delta.logStore.{verdict.scheme}.impl={DYNAMODB_LOG_STORE}",
        fix=override_fix(),
    )


def _options(storage_options: Mapping[str, Any] | None, environ: Mapping[str, str] | None) -> dict[str, str]:
    merged = {str(k).lower(): str(v) for k, v in (environ or {}).items() if str(k).upper().startswith("AWS_")}
    merged.update({str(k).lower(): str(v) for k, v in (storage_options or {}).items()})
    return merged


def _first(options: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if name in options and options[name].strip():
            return options[name].strip()
    return None


def delta_rs_storage_safety(
    table: Table,
    storage_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> StorageSafety:
    """Whether delta-rs (``deltalake`` >= 1.0) writers can safely commit to ``table`` at the same time.

    :param table: the table.
    :param storage_options: the writers' delta-rs ``storage_options`` (keys in any case).
    :param environ: the environment the writers see (``AWS_*`` variables count like storage options).
    """
    scheme = table.scheme
    if scheme not in S3_SCHEMES:
        return StorageSafety(
            table.name, scheme, "delta-rs", True, f"{scheme}: delta-rs commits with an atomic put-if-absent"
        )
    options = _options(storage_options, environ)
    unsafe_rename = _first(options, "aws_s3_allow_unsafe_rename", "allow_unsafe_rename")
    if unsafe_rename is not None and is_truthy(unsafe_rename):
        return StorageSafety(
            table.name,
            scheme,
            "delta-rs",
            False,
            "AWS_S3_ALLOW_UNSAFE_RENAME=true: delta-rs commits without mutual exclusion",
            setting="AWS_S3_ALLOW_UNSAFE_RENAME=false (the default: conditional put)",
            fix=f"remove AWS_S3_ALLOW_UNSAFE_RENAME, or pass {OVERRIDE_ARGUMENT}=True if there is one writer",
        )
    endpoint = _first(options, "aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint")
    conditional = _first(options, "aws_conditional_put", "conditional_put")
    if endpoint and (conditional or "").lower() != "etag":
        return StorageSafety(
            table.name,
            scheme,
            "delta-rs",
            False,
            f"an S3-compatible endpoint ({endpoint}) without conditional_put=etag: delta-rs cannot rely on "
            "put-if-absent there",
            setting="conditional_put=etag",
            fix="set conditional_put=etag if the store supports conditional writes (MinIO, R2 do), or "
            f"pass {OVERRIDE_ARGUMENT}=True if there is one writer",
        )
    return StorageSafety(
        table.name,
        scheme,
        "delta-rs",
        True,
        "delta-rs >= 1.0 commits to S3 with conditional writes (put-if-absent)",
    )


def mixed_storage_safety(
    table: Table,
    spark_conf: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> StorageSafety:
    """Whether Spark *and* delta-rs writers can safely commit to ``table`` at the same time.

    :param table: the table.
    :param spark_conf: the Spark writers' settings.
    :param storage_options: the delta-rs writers' storage options.
    :param environ: the delta-rs writers' environment.
    """
    verdicts = (
        spark_storage_safety(table, spark_conf),
        delta_rs_storage_safety(table, storage_options, environ),
    )
    for verdict in verdicts:
        if not verdict.safe:
            return verdict
    scheme = table.scheme
    if scheme in S3_SCHEMES and verdicts[0].log_store == PUT_IF_ABSENT_LOG_STORE:
        return StorageSafety(
            table.name,
            scheme,
            "spark+delta-rs",
            True,
            "Spark (the put-if-absent log store) and delta-rs >= 1.0 (conditional put) both create commit "
            "files put-if-absent, so of any two writers racing for a version exactly one wins",
            log_store=PUT_IF_ABSENT_LOG_STORE,
        )
    if scheme in S3_SCHEMES:
        return StorageSafety(
            table.name,
            scheme,
            "spark+delta-rs",
            False,
            "Spark (DynamoDB log store) and delta-rs >= 1.0 (conditional put) commit to S3 through different "
            "mechanisms that do not exclude each other",
            fix="let one engine write the table, or serialize the writers",
        )
    return StorageSafety(
        table.name, scheme, "spark+delta-rs", True, SAFE_SCHEMES.get(scheme, f"{scheme}: not S3")
    )
