"""A job's lost report: its exit code and report, learnt when its report line never reached the submitter.

A driver in cluster deploy mode prints its report line into the cluster's logs, a stdout can be lost, and a
driver can be killed between its commit and its report. The submitter then asks, in order:

1. **the report the driver left** in the spec's ``report_trail.report_dir`` (see
   :mod:`airflow_provider_deltacc.contract.report_file`): the full report, conflicts and bad input included;
2. **the table's Delta log**, read by the provider's log reader (delta-rs where it cannot): every commit of
   the run carries a ``userMetadata`` tag that starts with ``deltacc:<run_token>:`` (see
   :func:`airflow_provider_deltacc.engine.commits.tagging_run`), so the run's commits are found whoever else
   committed meanwhile; and a write whose txn identity is recorded (by this run or an earlier try) is a
   committed duplicate (see :mod:`airflow_provider_deltacc.delta_log.fast_path`).

When neither answers, nothing of this run is in the log: the caller reports the job as failed (or killed)
and the task's retry is safe. Airflow-free and pyspark-free: it runs in the Airflow worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from airflow_provider_deltacc.contract.commit_report import AttemptRecord, CommitReport
from airflow_provider_deltacc.contract.commits import TXN_SCAN_VERSIONS, metric_value, run_tag_prefix
from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.delta_log.left_report import read_report, remove_report

log = logging.getLogger(__name__)

#: The ``answered_by`` metric of a report read from the report directory.
FROM_REPORT_FILE = "report-file"
#: The ``answered_by`` metric of a report rebuilt from the run's tagged commits.
FROM_DELTA_LOG = "delta-log"


def recover_lost_report(
    job: JobSpec, *, storage_options: Mapping[str, str] | None = None
) -> tuple[int, dict[str, Any]] | None:
    """The job's exit code and report from the report it left or from the Delta log, or None when neither
    says anything (nothing of this run was committed).

    :param job: the job spec as submitted (with its ``report_trail``).
    :param storage_options: delta-rs storage options for the table; None uses the environment.
    """
    if job.report_trail is None:
        return None
    if job.report_trail.report_dir:
        left = _left_report(job.report_trail.report_dir, job.report_trail.run_token)
        if left is not None:
            return left
    if not job.table.is_path:
        return None  # a catalog table: its log is the catalog's to find
    try:
        report = committed_from_log(job, storage_options)
    except Exception as exc:  # the log cannot be read: the outcome stays unknown
        log.warning("cannot read the Delta log of %s to learn the job's outcome: %s", job.table, exc)
        return None
    return None if report is None else (int(ExitCode.SUCCESS), report)


def _left_report(report_dir: str, run_token: str) -> tuple[int, dict[str, Any]] | None:
    try:
        left = read_report(report_dir, run_token)
    except Exception as exc:
        log.warning("cannot read the job's report in %s: %s; asking the Delta log", report_dir, exc)
        return None
    if left is None:
        return None
    code, report = left
    report.setdefault("metrics", {})["answered_by"] = FROM_REPORT_FILE
    log.info("The job's report line did not arrive; read the report it left in %s", report_dir)
    try:
        remove_report(report_dir, run_token)
    except Exception as exc:  # a leftover file harms nothing
        log.debug("could not remove the job's report in %s: %s", report_dir, exc)
    return code, report


def committed_from_log(
    job: JobSpec, storage_options: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """The report of what the run committed, from its tagged commits or its recorded txn identity; None when
    the log holds neither.

    :param job: the job spec, with a ``report_trail``.
    :param storage_options: delta-rs storage options.
    """
    from airflow_provider_deltacc.delta_log.fast_path import consult_log
    from airflow_provider_deltacc.delta_log.log_reader import commit_infos

    assert job.report_trail is not None
    started_at, start = time.time(), time.monotonic()
    prefix = run_tag_prefix(job.report_trail.run_token)
    history = commit_infos(job.table, storage_options, TXN_SCAN_VERSIONS)
    mine = sorted(
        (c for c in history if str(c.get("userMetadata") or "").startswith(prefix)),
        key=lambda c: int(c["version"]),
    )
    if not mine:
        duplicate = consult_log(job, storage_options=storage_options).report if job.txn else None
        if duplicate is not None:
            log.info("The job's report did not arrive; the Delta log records its txn identity")
        return duplicate
    metrics: dict[str, Any] = {}
    for commit in mine:
        for key, value in (commit.get("operationMetrics") or {}).items():
            metrics[key] = metric_value(value)
    versions = [int(c["version"]) for c in mine]
    seconds = time.monotonic() - start
    report = CommitReport(
        operation=job.operation.upper(),
        table=job.table.name,
        status="committed",
        table_version=versions[-1],
        attempts=[AttemptRecord(1, started_at, seconds, "committed")],
        skipped_duplicate=False,
        total_seconds=seconds,
        txn_app_id=job.txn.app_id if job.txn else None,
        txn_version=job.txn.version if job.txn else None,
        metrics={**metrics, "commit_versions": versions, "answered_by": FROM_DELTA_LOG},
    )
    result = report.to_dict()
    result["summary"] = report.summary_line()
    log.info("The job's report did not arrive; the Delta log holds its commits: %s", result["summary"])
    return result
