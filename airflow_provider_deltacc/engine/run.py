"""Run one job spec: a session of the operation's own, the operation's attempt, and the OCC commit loop."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.commit_report import CommitReport
from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.engine.backend import is_connect
from airflow_provider_deltacc.engine.by_value import pickled_by_value
from airflow_provider_deltacc.engine.confs import (
    explicit_confs,
    isolated_session,
    restore_confs,
    runtime_confs,
    set_runtime_conf,
)
from airflow_provider_deltacc.engine.operations import PreparedOperation, SourceHook, build_operation
from airflow_provider_deltacc.engine.source_function import workers_load_the_function
from airflow_provider_deltacc.occ.commit_loop import Turns, run_commit_loop
from airflow_provider_deltacc.spark_jars.connect_mode import spark_connect_code

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_log = logging.getLogger(__name__)


def run_operation(
    spark: SparkSession,
    spec: JobSpec,
    *,
    logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    source_hook: SourceHook | None = None,
    sleep: Callable[[float], object] = time.sleep,
    turns: Turns | None = None,
) -> CommitReport:
    """Validate ``spec`` against the table, then run it until it commits, is skipped, or fails.

    The operation runs in a session of its own (see :func:`operation_session`), so that its txn identity,
    commit tag and ``spec.spark_conf`` never reach other operations. A source function's own module is
    pickled by value meanwhile (:func:`~airflow_provider_deltacc.engine.by_value.pickled_by_value`),
    so its UDFs reach Spark's Python workers; a module they cannot import is bad input naming the function
    (:func:`~airflow_provider_deltacc.engine.source_function.workers_load_the_function`).

    :param spark: a Delta-enabled session, classic or Spark Connect.
    :param spec: the parsed job spec.
    :param logger: where the commit loop logs; its own logger when None.
    :param source_hook: see :data:`~airflow_provider_deltacc.engine.operations.SourceHook`.
    :param sleep: the backoff sleep (tests pass a fake).
    :param turns: the writer's place among the writers of its table (see
        :class:`~airflow_provider_deltacc.occ.commit_loop.Turns`). When it has a ``before_commit()`` (a
        :class:`~airflow_provider_deltacc.leases.fence.LeaseFence`), that is called after the source is
        built, right before the write that commits.
    :raises InputError: the spec does not fit the table (nothing was written).
    :raises CommitLoopError: the commit loop stopped; ``.report`` holds every attempt.
    """
    function = spec.source.function if spec.source is not None else None
    user_code = function.function if function is not None else None
    before_commit = getattr(turns, "before_commit", None)
    if before_commit is not None:
        source_hook = _fenced(source_hook, before_commit)
    with operation_session(spark, spec.spark_conf) as session, pickled_by_value(user_code):
        prepared = _build(session, spec, source_hook)
        work = prepared.work
        if function is not None:
            work = workers_load_the_function(work, function.name)
        return run_commit_loop(
            work,
            operation=prepared.name,
            table=spec.table.name,
            op_class=prepared.op_class,
            policy=spec.commit_retry,
            owns_txn_identity=spec.txn is not None,
            txn_app_id=spec.txn.app_id if spec.txn else None,
            txn_version=spec.txn.version if spec.txn else None,
            pinned_columns=prepared.pinned_columns,
            logger=logger,
            sleep=sleep,
            turns=turns,
        )


def _build(spark: SparkSession, spec: JobSpec, source_hook: SourceHook | None) -> PreparedOperation:
    """Validate the operation and return its attempt. Bad input found on the snapshot the worker read (the
    spec's ``known_snapshot``) is looked for again on Spark's own read, which decides: the table may have
    changed since."""
    try:
        return build_operation(spark, spec, source_hook)
    except InputError as exc:
        if spec.known_snapshot is None:
            raise
        _log.debug("checked against the snapshot the worker read (%s); reading it on Spark", exc)
        return build_operation(spark, replace(spec, known_snapshot=None), source_hook)


def _fenced(hook: SourceHook | None, before_commit: Callable[[], object]) -> SourceHook:
    """The source hook, then ``before_commit``: the last check before an attempt's write commits."""

    def fenced(source: DataFrame, attempt: int) -> DataFrame:
        frame = hook(source, attempt) if hook is not None else source
        before_commit()
        return frame

    return fenced


@contextmanager
def operation_session(spark: SparkSession, spark_conf: Mapping[str, str]) -> Iterator[SparkSession]:
    """The session one operation runs in, with ``spark_conf`` applied.

    A classic session gets a child (:func:`~airflow_provider_deltacc.engine.confs.isolated_session`). A Spark
    Connect session has no children: the hook opens one per run, and ``spark_conf`` is set on it for the
    block and restored afterwards, so a caller that runs several operations in one Connect session still
    keeps them apart as long as they run one at a time.

    On a Spark Connect session the whole block (the source function's calls and the writes) runs as Spark
    Connect code in pyspark's eyes
    (:func:`~airflow_provider_deltacc.spark_jars.connect_mode.spark_connect_code`):
    ``pyspark.sql.functions`` and UDFs in the user's code build Connect columns. The mark is process-wide;
    while it is held, classic-session code in other threads of the process must not build
    ``pyspark.sql.functions`` columns (see :mod:`~airflow_provider_deltacc.spark_jars.connect_mode`).

    :param spark: the session the job was given.
    :param spark_conf: runtime settings for the operation.
    """
    if not is_connect(spark):
        yield isolated_session(spark, spark_conf)
        return
    with spark_connect_code():
        wanted = runtime_confs(spark, spark_conf)
        previous = explicit_confs(spark, wanted)
        applied: list[str] = []
        try:
            for key, value in wanted.items():
                if set_runtime_conf(spark, key, value):
                    applied.append(key)
            yield spark
        except BaseException:
            restore_confs(spark, {key: previous[key] for key in applied}, failing=True)
            raise
        restore_confs(spark, {key: previous[key] for key in applied})
