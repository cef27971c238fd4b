"""Run one job spec and report it: ``python -m airflow_provider_deltacc.spark_job --spec FILE``.

The CLI (also run as a plain file by spark-submit) and :func:`run_job` (the in-process mode) share every line
after reading the spec. The CLI prints exactly one ``DELTACC_REPORT <json>`` line to stdout and exits with an
:class:`~airflow_provider_deltacc.contract.exit_codes.ExitCode`; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import (
    CommitLoopError,
    ConflictFatalError,
    ConflictRetriesExhaustedError,
    InputError,
    LeaseLapsedError,
    UnsafeStorageError,
    short_repr,
)
from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.redaction import hide_jvm_protocol_log
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.occ.classifier import classify
from airflow_provider_deltacc.spark_jars.connect_mode import CONNECT_MODE_ENV, running_classic_session
from airflow_provider_deltacc.spark_job.leave_report import leave_report
from airflow_provider_deltacc.spark_job.report_line import format_report_line
from airflow_provider_deltacc.spark_job.storage_errors import storage_input_error, storage_unreachable
from airflow_provider_deltacc.spark_job.unavailable import session_lost, unavailable_reason

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_deltacc.engine.operations import SourceHook
    from airflow_provider_deltacc.occ.commit_loop import Turns

log = logging.getLogger("airflow_provider_deltacc.spark_job")

_MESSAGE_LIMIT = 2000
# Spark errors that are deterministic consequences of the input (a schema mismatch, an unresolvable column)
# rather than of the cluster; retrying the same spec cannot help.
_INPUT_ERROR_TYPES = ("AnalysisException", "ParseException", "InputError", "SpecError")


def run_job(
    spec: str | bytes | Mapping[str, Any] | JobSpec,
    spark: SparkSession | None = None,
    *,
    source_hook: SourceHook | None = None,
    turns: Turns | None = None,
    session_factory: Callable[[Mapping[str, str] | None], SparkSession] | None = None,
) -> tuple[int, dict[str, Any]]:
    """Validate and run one job spec; never raises for a job failure.

    :param spec: the spec: typed (in the worker's process), or a dict or JSON text (parsed here).
    :param spark: the session to use; None gets one from ``session_factory``.
    :param session_factory: gets the session from the spec's ``spark_conf`` when ``spark`` is None; a
        failure to start one is the job's failure, reported as any other. Default:
        :func:`get_or_create_session` (the active session, or the Spark driver's under spark-submit).
    :param source_hook: see :data:`~airflow_provider_deltacc.engine.operations.SourceHook` (tests).
    :param turns: the writer's place among the writers of its table, when the caller holds a write lease
        (see :class:`~airflow_provider_deltacc.occ.commit_loop.Turns`).
    :returns: the exit code and the report dict (with ``status`` and, on failure, ``error``).
    """
    raw = dict(spec) if isinstance(spec, Mapping) else None
    try:
        parsed = spec if isinstance(spec, JobSpec) else parse_spec(spec)
    except InputError as exc:
        return ExitCode.BAD_INPUT, bare_report(raw, None, "bad_input", exc)
    from airflow_provider_deltacc.engine.commits import tagging_run
    from airflow_provider_deltacc.engine.run import run_operation

    if turns is None and parsed.turn_service is not None:
        from airflow_provider_deltacc.occ.remote_turns import RemoteTurns

        service = parsed.turn_service
        turns = RemoteTurns(
            service.url, service.token, service.timeout_s, fenced=service.fenced, table=parsed.table.name
        )
    start_session = session_factory or get_or_create_session
    try:
        session = spark if spark is not None else start_session(parsed.spark_conf)
        storage = check_storage_safety(session, parsed)
        with tagging_run(parsed.report_trail.run_token if parsed.report_trail else None):
            report = run_operation(session, parsed, logger=log, source_hook=source_hook, turns=turns)
    except ConflictRetriesExhaustedError as exc:
        return ExitCode.CONFLICT_RETRYABLE, _loop_report(exc, exc.report.status, exc)
    except ConflictFatalError as exc:
        return ExitCode.CONFLICT_FATAL, _loop_report(exc, exc.report.status, exc)
    except CommitLoopError as exc:
        cause = exc.__cause__ or exc
        if _is_input_error(cause):
            return ExitCode.BAD_INPUT, _loop_report(exc, "bad_input", cause)
        if (bad := storage_input_error(cause, parsed.table)) is not None:
            return ExitCode.BAD_INPUT, _loop_report(exc, "bad_input", bad)
        if (gone := _gone(cause, parsed.table)) is not None:
            return ExitCode.UNAVAILABLE, _unavailable(_loop_report(exc, exc.report.status, cause), gone)
        return ExitCode.FAILURE, _session_lost(_loop_report(exc, exc.report.status, cause), exc)
    except InputError as exc:  # found before the first attempt (the table, the source, the storage): one line
        log.error("bad input, nothing was written: %s", exc)
        return ExitCode.BAD_INPUT, bare_report(raw, parsed, "bad_input", exc)
    except Exception as exc:
        if (bad := storage_input_error(exc, parsed.table)) is not None:
            log.error("bad input, nothing was written: %s", bad)
            return ExitCode.BAD_INPUT, bare_report(raw, parsed, "bad_input", bad)
        if (gone := _gone(exc, parsed.table)) is not None:
            log.error("%s went away before the first attempt: %s", gone, _first_line(exc))
            return ExitCode.UNAVAILABLE, _unavailable(bare_report(raw, parsed, "error", exc), gone)
        log.exception("the Delta job failed before its first attempt")
        if _is_input_error(exc):
            return ExitCode.BAD_INPUT, bare_report(raw, parsed, "bad_input", exc)
        return ExitCode.FAILURE, _session_lost(bare_report(raw, parsed, "error", exc), exc)
    result = report.to_dict()
    result["summary"] = report.summary_line()
    if storage is not None:
        result["storage_safety"] = storage
    return ExitCode.SUCCESS, result


def check_storage_safety(session: SparkSession, spec: JobSpec) -> dict[str, Any] | None:
    """Refuse a commit to storage without a multi-writer log store unless the spec says how it is guarded.

    Defense in depth for callers that bypass the operators (which decide this before submitting and then
    either hold an exclusive lease or pass the explicit override): the verdict is taken from the session's
    *effective* settings, which include the cluster's ``spark-defaults.conf``.

    :param session: the job's session.
    :param spec: the parsed spec.
    :returns: the verdict and the guard (for the report) when the storage is unsafe or the spec is guarded,
        else None.
    :raises UnsafeStorageError: when it is unsafe and ``storage_guard`` is not set.
    """
    from airflow_provider_deltacc.contract.storage_safety import (
        LEGACY_LOG_STORE_CONF,
        S3_SCHEMES,
        spark_storage_safety,
    )

    if spec.operation == "vacuum" or spec.table.scheme not in S3_SCHEMES:
        return None  # VACUUM deletes files but commits nothing (unless VACUUM logging is on)
    from airflow_provider_deltacc.engine.backend import is_connect

    conf: dict[str, str] = {}
    # A Spark Connect session has no SparkContext; its runtime conf holds the server's settings too.
    context_conf = None if is_connect(session) else session.sparkContext.getConf()
    for key in (LEGACY_LOG_STORE_CONF, *(f"spark.delta.logStore.{s}.impl" for s in sorted(S3_SCHEMES))):
        value = session.conf.get(key, None) or (context_conf.get(key, None) if context_conf else None)
        if value:
            conf[key] = value
    conf.update(spec.spark_conf)
    verdict = spark_storage_safety(spec.table, conf)
    if verdict.safe:
        # The worker judged the table unsafe from what it could see and guarded the write: say so.
        return None if spec.storage_guard is None else {**verdict.to_dict(), "guard": spec.storage_guard}
    if spec.storage_guard is None:
        raise UnsafeStorageError(
            "storage_guard",
            None,
            f"refusing to write: {verdict.message()}. Run it through a Delta operator (which serializes "
            "writers on this table with an exclusive lease), or set storage_guard to 'override' in the spec",
        )
    log.warning(
        "unsafe storage for concurrent writers, guarded by %s: %s", spec.storage_guard, verdict.message()
    )
    return {**verdict.to_dict(), "guard": spec.storage_guard}


def get_or_create_session(spark_conf: Mapping[str, str] | None = None) -> SparkSession:
    """Return the active session, or, under spark-submit, start the application's with the Delta settings
    and ``spark_conf`` (its master and jars come from spark-submit).

    :param spark_conf: Spark settings for a new session (static ones can only be set here).
    :raises InputError: outside spark-submit with no session running: this module is the Spark driver's; a
        process of its own that runs a job starts its session first (the in-process mode does, with
        :func:`~airflow_provider_deltacc.spark_jars.local_session.in_process_session`).
    """
    from pyspark.sql import SparkSession

    from airflow_provider_deltacc.spark_jars.delta_conf import DELTA_SPARK_CONF

    hide_jvm_protocol_log(spark_conf)
    active = running_classic_session()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        raise InputError(
            "spark-submit",
            None,
            "the job runs as a Spark driver: start it with spark-submit (--jars with the Delta jars), as "
            "the operators' spark_submit mode does, or in a process with a Delta session already running "
            "(DeltaCCHook(execution_mode='in_process') starts one)",
        )
    builder = SparkSession.builder.appName("deltacc-job")
    for key, value in {**DELTA_SPARK_CONF, **(spark_conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    """The CLI: read the spec file, run it, leave the report in the spec's ``report_trail.report_dir`` (if
    any), print the report line, return the exit code.

    :param argv: the arguments (``sys.argv[1:]`` when None).
    """
    parser = argparse.ArgumentParser(prog="python -m airflow_provider_deltacc.spark_job", description=__doc__)
    parser.add_argument("--spec", required=True, help="path of the JSON job spec ('-' for stdin)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # A driver is classic: a Connect mark inherited from its worker would make pyspark build Connect sessions.
    os.environ.pop(CONNECT_MODE_ENV, None)
    try:
        text = sys.stdin.read() if args.spec == "-" else _read(args.spec)
    except OSError as exc:
        error = InputError("--spec", args.spec, f"cannot read the spec file: {exc}")
        code, report = int(ExitCode.BAD_INPUT), bare_report(None, None, "bad_input", error)
    else:
        code, report = run_job(text)
        leave_report(text, int(code), report)
    sys.stdout.write(format_report_line(report) + "\n")
    sys.stdout.flush()
    return int(code)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _is_input_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if not names.intersection(_INPUT_ERROR_TYPES):
        return False
    # A conflict raised as an AnalysisException (a schema changed since analysis) is not the input's fault.
    return classify(exc) is None


def _error(exc: BaseException) -> dict[str, Any]:
    text = str(exc).strip()
    error: dict[str, Any] = {"type": type(exc).__name__, "message": text[:_MESSAGE_LIMIT]}
    if isinstance(exc, InputError):
        error["field"] = exc.field
        error["value"] = (
            exc.value if isinstance(exc.value, str | int | float | bool | None) else short_repr(exc.value)
        )
        error["reason"] = exc.message[:_MESSAGE_LIMIT]  # what is wrong and the fix, without field=value
    return error


def _gone(exc: BaseException, table: Table) -> str | None:
    """What went away, when ``exc`` is an infrastructure failure: Spark, the storage, or the lease that kept
    the write safe (a lapsed lease abandons the attempt before its commit)."""
    if isinstance(exc, LeaseLapsedError):
        return exc.unreachable
    return unavailable_reason(exc) or storage_unreachable(exc, table)


def _unavailable(report: dict[str, Any], gone: str) -> dict[str, Any]:
    report["error"]["unreachable"] = gone
    return report


def _session_lost(report: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """Mark a failure whose Spark Connect session was closed under it (see
    :func:`~airflow_provider_deltacc.spark_job.unavailable.session_lost`): the Connect runner asks the server
    whether it went away."""
    if (closed := session_lost(exc)) is not None:
        report["error"]["session_lost"] = closed
    return report


def _loop_report(exc: CommitLoopError, status: str, cause: BaseException) -> dict[str, Any]:
    result = exc.report.to_dict()
    result["status"] = status
    result["summary"] = exc.report.summary_line()
    result["error"] = _error(cause)
    if cause is not exc:
        result["error"]["loop_message"] = str(exc)[:_MESSAGE_LIMIT]
    return result


def bare_report(
    raw: dict[str, Any] | None, parsed: JobSpec | None, status: str, exc: BaseException
) -> dict[str, Any]:
    """The report of a job that made no attempt: its operation and table, its status and the error.

    :param raw: the spec as given, when it was a dict (its operation and table when it did not parse).
    :param parsed: the typed spec, or None when it did not parse.
    :param status: ``bad_input`` or ``error``.
    :param exc: what went wrong.
    """
    raw = raw or {}
    operation = parsed.operation if parsed else raw.get("operation")
    table = parsed.table.name if parsed else raw.get("table")
    txn = parsed.txn if parsed else None
    return {
        "operation": str(operation).upper() if isinstance(operation, str) else None,
        "table": table if isinstance(table, str) else None,
        "status": status,
        "table_version": None,
        "attempts": [],
        "skipped_duplicate": False,
        "total_seconds": 0.0,
        "txn_app_id": txn.app_id if txn else None,
        "txn_version": txn.version if txn else None,
        "metrics": {},
        "summary": f"{status}: {_first_line(exc)}",
        "error": _error(exc),
    }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
