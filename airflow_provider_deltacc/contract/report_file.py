"""The report the driver leaves on storage, for a submitter that does not see the driver's stdout: where it
is and what it holds.

In cluster deploy mode (YARN, Kubernetes) the driver runs on the cluster and its stdout, with the report line,
stays in the cluster's logs. A spec with ``outcome.report_dir`` makes the job also write
``<report_dir>/<run_token>.json`` (``{"exit_code": ..., "report": {...}}``) before it prints the line
(:func:`airflow_provider_deltacc.spark_job.leave_report.leave_report`); the submitter reads it back and
removes it (:mod:`airflow_provider_deltacc.delta_log.left_report`).

The driver writes local paths (no scheme, ``file:``) with Python and any other URI through Spark's Hadoop
file system, so every scheme the cluster can write (``hdfs://``, ``s3a://``, ``abfss://``, ``gs://``) works;
the submitter reads local paths with Python and URIs with delta-rs' object store (the same access the log
fast path uses). Neither side imports Airflow; the submitter never imports pyspark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlparse


def report_name(run_token: str) -> str:
    """The report's file name in its directory.

    :param run_token: the spec's ``outcome.run_token``.
    """
    return f"{run_token}.json"


def local_dir(report_dir: str) -> Path | None:
    """The local directory ``report_dir`` names (a path or a ``file:`` URI), None for other URIs.

    :param report_dir: the spec's ``outcome.report_dir``.
    """
    parsed = urlparse(report_dir)
    if parsed.scheme == "":
        return Path(report_dir)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(parsed.path)
    return None


def report_text(code: int, report: dict[str, Any]) -> str:
    """What the report file holds: the job's exit code and report, as JSON.

    :param code: the job's exit code.
    :param report: the job's report.
    """
    return json.dumps({"exit_code": code, "report": report}, sort_keys=True, default=str)


def read_report_text(text: str, where: str) -> tuple[int, dict[str, Any]]:
    """The exit code and report of a report file's text (:func:`report_text`).

    :param text: the file's text.
    :param where: the file, for the error.
    :raises ValueError: the file is not a report the job wrote.
    """
    data = json.loads(text)
    code, report = data.get("exit_code"), data.get("report")
    if not isinstance(code, int) or not isinstance(report, dict):
        raise ValueError(f"{where} is not a report the job wrote")
    return code, report
