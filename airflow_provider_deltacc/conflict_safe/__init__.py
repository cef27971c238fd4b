"""Conflict-safe Delta writes for code that already runs as a Spark application or a notebook.

The same commit loop the Airflow operators run, as plain function calls: no Airflow, no lease store.
``build_source`` is your own PySpark code, a function of the session that returns the DataFrame to write.
It is called afresh in every attempt, on the attempt's snapshot, so a value it collects eagerly (a balance,
a lookup) is read again after a conflict. Conflicts are classified; the retryable ones are retried with
bounded, jittered backoff, and the whole read-modify-write runs again. A ``txn_app_id``/``txn_version``
pair makes the write exactly-once: a re-run with the same pair writes nothing and does not call
``build_source``::

    from airflow_provider_deltacc.conflict_safe import conflict_safe_merge

    def build_orders(spark):
        return spark.read.parquet("s3a://landing/orders/2026-11-26").where("amount > 0")

    report = conflict_safe_merge(
        spark, "s3a://lake/orders", build_orders, keys=["order_id", "date"],
        txn_app_id="orders-loader", txn_version=20261126,
    )
    print(report.summary_line())

Each function returns the :class:`~airflow_provider_deltacc.contract.commit_report.CommitReport` (every
attempt, the committed version, ``skipped_duplicate``) and raises, with the report on the exception:

- :class:`~airflow_provider_deltacc.contract.exceptions.InputError`: bad input (an option, a source that does
  not fit the table, a function that returns no DataFrame); nothing was written (``report`` is set when the
  first attempt found it);
- :class:`~airflow_provider_deltacc.contract.exceptions.ConflictRetriesExhaustedError`: a retryable conflict
  outlasted ``commit_retry``; run the whole call again later;
- :class:`~airflow_provider_deltacc.contract.exceptions.ConflictFatalError`: a conflict retrying cannot fix;
- :class:`~airflow_provider_deltacc.contract.exceptions.CommitLoopError`: anything else, e.g. ``build_source``
  raised (its exception is ``__cause__``).

Ship it to a cluster with the bundle the provider builds for spark-submit
(``python -m airflow_provider_deltacc.hooks.bundle DIR`` writes the zips: pass them to ``--py-files``), or
``pip install airflow-provider-deltacc`` on the driver; see ``docs/pyspark.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.commit_report import CommitReport
from airflow_provider_deltacc.contract.source_function import SourceFunction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_deltacc.contract.spec import OperationOptions

__all__ = ["conflict_safe_append", "conflict_safe_merge", "conflict_safe_overwrite_partitions"]

SourceBuilder = Callable[..., "DataFrame"]


def conflict_safe_merge(
    spark: SparkSession,
    table: str,
    build_source: SourceBuilder,
    *,
    keys: Sequence[str] = (),
    condition: str | None = None,
    when_matched: Sequence[Mapping[str, Any]] | None = None,
    when_not_matched: Sequence[Mapping[str, Any]] | None = None,
    partition_pin: str | Sequence[str] | None = "keyed",
    txn_app_id: str | None = None,
    txn_version: int | None = None,
    commit_retry: Mapping[str, Any] | None = None,
    spark_conf: Mapping[str, str] | None = None,
    storage_guard: str | None = None,
    logger: logging.Logger | None = None,
    **renamed: Any,
) -> CommitReport:
    """MERGE what ``build_source`` returns into ``table`` (aliased ``t``; the source is ``s``).

    :param spark: a Delta-enabled session, classic or Spark Connect.
    :param table: the target: a path or a catalog name.
    :param build_source: ``build_source(spark)`` returns the source DataFrame; called in every attempt.
    :param keys: key columns: ON is ``t.k = s.k AND ...``; a partition column among them pins the MERGE
        to the source's partitions.
    :param condition: an explicit ON condition instead of ``keys``.
    :param when_matched: the matched clauses, e.g. ``[{"action": "update", "set": {"n": "t.n + s.n"}}]``;
        the default updates every column.
    :param when_not_matched: the not-matched clauses; the default inserts every column.
    :param partition_pin: ``"keyed"`` (default), ``"auto"``, a list of partition columns, or None.
    :param txn_app_id: the exactly-once identity's app id (with ``txn_version``).
    :param txn_version: the exactly-once identity's version, growing with each new write of the app id.
    :param commit_retry: the in-job retries of a conflict: ``max_attempts``, ``min_wait_s``, ``max_wait_s``,
        ``total_timeout_s``, ``jitter`` (the job spec's ``commit_retry``).
    :param spark_conf: runtime Spark settings for this write only.
    :param storage_guard: on S3 without a multi-writer log store, ``"override"`` states that you make sure
        no other writer runs (else the write is refused).
    :param logger: where the conflict lines and the summary go.
    :raises TypeError: an unknown argument, or ``retry_policy`` (``commit_retry``'s name before the rename).
    """
    from airflow_provider_deltacc.contract.spec_options import merge_options

    arguments = locals()
    return _run(
        spark,
        "merge",
        build_source,
        lambda: merge_options(
            keys=list(keys),
            condition=condition,
            when_matched=None if when_matched is None else [dict(clause) for clause in when_matched],
            when_not_matched=(
                None if when_not_matched is None else [dict(clause) for clause in when_not_matched]
            ),
            partition_pin=_pin(partition_pin),
        ),
        arguments,
    )


def conflict_safe_append(
    spark: SparkSession,
    table: str,
    build_source: SourceBuilder,
    *,
    partition_by: Sequence[str] = (),
    create_if_missing: bool = True,
    merge_schema: bool = False,
    cluster_by: Sequence[str] = (),
    txn_app_id: str | None = None,
    txn_version: int | None = None,
    commit_retry: Mapping[str, Any] | None = None,
    spark_conf: Mapping[str, str] | None = None,
    storage_guard: str | None = None,
    logger: logging.Logger | None = None,
    **renamed: Any,
) -> CommitReport:
    """Append what ``build_source`` returns to ``table`` (a blind append).

    :param spark: a Delta-enabled session, classic or Spark Connect.
    :param table: the target: a path or a catalog name.
    :param build_source: ``build_source(spark)`` returns the rows to append; called in every attempt.
    :param partition_by: partition columns when the append creates the table.
    :param create_if_missing: create the table when it does not exist.
    :param merge_schema: add new source columns to the table.
    :param cluster_by: liquid-clustering columns when the append creates the table.
    :param txn_app_id: see :func:`conflict_safe_merge`.
    :param txn_version: see :func:`conflict_safe_merge`.
    :param commit_retry: see :func:`conflict_safe_merge`.
    :param spark_conf: see :func:`conflict_safe_merge`.
    :param storage_guard: see :func:`conflict_safe_merge`.
    :param logger: see :func:`conflict_safe_merge`.
    """
    from airflow_provider_deltacc.contract.spec_options import append_options

    arguments = locals()
    return _run(
        spark,
        "append",
        build_source,
        lambda: append_options(
            partition_by=list(partition_by),
            create_if_missing=create_if_missing,
            merge_schema=merge_schema,
            cluster_by=list(cluster_by),
        ),
        arguments,
    )


def conflict_safe_overwrite_partitions(
    spark: SparkSession,
    table: str,
    build_source: SourceBuilder,
    *,
    partition_values: Sequence[Mapping[str, Any]] | None = None,
    txn_app_id: str | None = None,
    txn_version: int | None = None,
    commit_retry: Mapping[str, Any] | None = None,
    spark_conf: Mapping[str, str] | None = None,
    storage_guard: str | None = None,
    logger: logging.Logger | None = None,
    **renamed: Any,
) -> CommitReport:
    """Replace whole partitions of ``table`` with what ``build_source`` returns.

    :param spark: a Delta-enabled session, classic or Spark Connect.
    :param table: the target, a partitioned Delta table.
    :param build_source: ``build_source(spark)`` returns the new rows; called in every attempt.
    :param partition_values: the partitions to replace, e.g. ``[{"date": "2026-11-26"}]``; by default the
        source's distinct partitions.
    :param txn_app_id: see :func:`conflict_safe_merge`.
    :param txn_version: see :func:`conflict_safe_merge`.
    :param commit_retry: see :func:`conflict_safe_merge`.
    :param spark_conf: see :func:`conflict_safe_merge`.
    :param storage_guard: see :func:`conflict_safe_merge`.
    :param logger: see :func:`conflict_safe_merge`.
    """
    from airflow_provider_deltacc.contract.spec_options import overwrite_partitions_options

    arguments = locals()
    return _run(
        spark,
        "overwrite_partitions",
        build_source,
        lambda: overwrite_partitions_options(
            partition_values=None if partition_values is None else [dict(v) for v in partition_values]
        ),
        arguments,
    )


def _pin(partition_pin: str | Sequence[str] | None) -> str | list[str] | None:
    return partition_pin if partition_pin is None or isinstance(partition_pin, str) else list(partition_pin)


def _run(
    spark: SparkSession,
    operation: str,
    build_source: SourceBuilder,
    options: Callable[[], OperationOptions],
    arguments: Mapping[str, Any],
) -> CommitReport:
    """Build the typed spec from the call's arguments (``options`` builds the operation's own, once the
    arguments every call shares are checked), check the storage, run the commit loop."""
    from airflow_provider_deltacc.contract.exceptions import (
        CommitLoopError,
        ConflictError,
        InputError,
        refuse_renamed,
    )

    owner = f"conflict_safe_{operation}"
    renamed = arguments["renamed"]
    refuse_renamed(renamed, {"retry_policy": "commit_retry"}, owner=owner)
    if renamed:
        raise TypeError(f"{owner}() got unexpected keyword arguments {sorted(renamed)}")

    from airflow_provider_deltacc.contract.spec_build import commit_retry_of, job_spec, txn_identity
    from airflow_provider_deltacc.contract.spec_sources import callable_source
    from airflow_provider_deltacc.engine.run import run_operation
    from airflow_provider_deltacc.spark_job.main import check_storage_safety

    if not callable(build_source):
        raise InputError("build_source", build_source, "must be a function of the Spark session")
    app_id, version = arguments["txn_app_id"], arguments["txn_version"]
    if (app_id is None) != (version is None):
        raise InputError(
            "txn_app_id" if app_id is None else "txn_version",
            None,
            "give txn_app_id and txn_version together (the exactly-once identity), or neither",
        )
    commit_retry = arguments["commit_retry"]
    parsed = job_spec(
        operation=operation,
        table=arguments["table"],
        txn=None if app_id is None else txn_identity(app_id=app_id, version=version),
        source=callable_source(function=SourceFunction(build_source)),
        options=options(),
        commit_retry=commit_retry_of(None if commit_retry is None else dict(commit_retry)),
        spark_conf=dict(arguments["spark_conf"] or {}),
        storage_guard=arguments["storage_guard"],
    )
    check_storage_safety(spark, parsed)
    try:
        return run_operation(spark, parsed, logger=arguments["logger"])
    except CommitLoopError as exc:
        cause = exc.__cause__
        if isinstance(cause, InputError) and not isinstance(exc, ConflictError):
            # Bad input found by the first attempt (what build_source returned): nothing was written.
            cause.report = exc.report  # type: ignore[attr-defined]
            raise cause from None
        raise
