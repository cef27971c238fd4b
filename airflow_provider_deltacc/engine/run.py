"""Run one job spec: an isolated session, the operation's attempt, and the OCC commit loop around it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.engine.confs import isolated_session
from airflow_provider_deltacc.engine.operations import SourceHook, build_operation
from airflow_provider_deltacc.engine.spec import JobSpec
from airflow_provider_deltacc.occ.commit_loop import run_commit_loop
from airflow_provider_deltacc.occ.report import CommitReport

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def run_operation(
    spark: SparkSession,
    spec: JobSpec,
    *,
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    source_hook: SourceHook | None = None,
    sleep: Callable[[float], object] = time.sleep,
) -> CommitReport:
    """Validate ``spec`` against the table, then run it until it commits, is skipped, or fails.

    The operation runs in a child session of ``spark`` so that its txn identity, commit tag and
    ``spec.spark_conf`` never reach other operations of the same process.

    :param spark: a Delta-enabled session.
    :param spec: the parsed job spec.
    :param logger: where the commit loop logs; its own logger when None.
    :param source_hook: see :data:`~airflow_provider_deltacc.engine.operations.SourceHook`.
    :param sleep: the backoff sleep (tests pass a fake).
    :raises InputError: the spec does not fit the table (nothing was written).
    :raises CommitLoopError: the commit loop stopped; ``.report`` holds every attempt.
    """
    session = isolated_session(spark, spec.spark_conf)
    prepared = build_operation(session, spec, source_hook)
    return run_commit_loop(
        prepared.work,
        operation=prepared.name,
        table=spec.table,
        op_class=prepared.op_class,
        policy=spec.retry_policy,
        owns_txn_identity=spec.txn is not None,
        txn_app_id=spec.txn.app_id if spec.txn else None,
        txn_version=spec.txn.version if spec.txn else None,
        logger=logger,
        sleep=sleep,
    )
