"""One module per Delta operation; :func:`build_operation` picks the right one for a spec."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.engine.operations.base import PreparedOperation, SourceHook

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_deltacc.contract.spec import JobSpec

__all__ = ["PreparedOperation", "SourceHook", "build_operation"]


def build_operation(spark: SparkSession, spec: JobSpec, hook: SourceHook | None = None) -> PreparedOperation:
    """Validate ``spec`` against the table and return the operation's attempt.

    :param spark: the operation's own session.
    :param spec: the parsed job spec.
    :param hook: optional source hook (for operations that read a source).
    :raises InputError: when the table, the source or an option does not fit.
    """
    from airflow_provider_deltacc.engine.operations.append import build_append
    from airflow_provider_deltacc.engine.operations.delete import build_delete
    from airflow_provider_deltacc.engine.operations.merge import build_merge
    from airflow_provider_deltacc.engine.operations.optimize import build_optimize
    from airflow_provider_deltacc.engine.operations.overwrite_partitions import build_overwrite_partitions
    from airflow_provider_deltacc.engine.operations.sql import build_sql
    from airflow_provider_deltacc.engine.operations.update import build_update
    from airflow_provider_deltacc.engine.operations.vacuum import build_vacuum

    operation = spec.operation
    if operation == "append":
        return build_append(spark, spec, hook)
    if operation == "overwrite_partitions":
        return build_overwrite_partitions(spark, spec, hook)
    if operation == "merge":
        return build_merge(spark, spec, hook)
    if operation == "update":
        return build_update(spark, spec)
    if operation == "delete":
        return build_delete(spark, spec)
    if operation == "optimize":
        return build_optimize(spark, spec)
    if operation == "vacuum":
        return build_vacuum(spark, spec)
    if operation == "sql":
        return build_sql(spark, spec, hook)
    raise ValueError(f"unknown operation {operation!r}")
