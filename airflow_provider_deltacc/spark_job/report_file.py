"""The report the driver leaves on storage, for a submitter that does not see the driver's stdout.

In cluster deploy mode (YARN, Kubernetes) the driver runs on the cluster and its stdout, with the report line,
stays in the cluster's logs. A spec with ``outcome.report_dir`` makes the job also write
``<report_dir>/<run_token>.json`` (``{"exit_code": ..., "report": {...}}``) before it prints the line; the
submitter reads it back (:func:`read_report`) and removes it.

The driver writes local paths (no scheme, ``file:``) with Python and any other URI through Spark's Hadoop
file system, so every scheme the cluster can write (``hdfs://``, ``s3a://``, ``abfss://``, ``gs://``) works;
the submitter reads local paths with Python and URIs with delta-rs' object store (the same access the log
fast path uses). Neither side imports Airflow; the submitter never imports pyspark.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

log = logging.getLogger(__name__)


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


def leave_report(spec_text: str | bytes, code: int, report: dict[str, Any]) -> str | None:
    """In the driver: write the report where the spec's ``outcome.report_dir`` says; never raises (the
    report line is still printed, and the submitter falls back to the Delta log).

    :param spec_text: the job spec's JSON text.
    :param code: the job's exit code.
    :param report: the job's report.
    :returns: where it was written, or None.
    """
    try:
        outcome = json.loads(spec_text).get("outcome") or {}
        report_dir, run_token = outcome.get("report_dir"), outcome.get("run_token")
    except (ValueError, AttributeError):
        return None
    if not isinstance(report_dir, str) or not isinstance(run_token, str):
        return None
    data = json.dumps({"exit_code": code, "report": report}, sort_keys=True, default=str)
    try:
        local = local_dir(report_dir)
        if local is not None:
            local.mkdir(parents=True, exist_ok=True)
            target = local / report_name(run_token)
            partial = target.with_suffix(".partial")
            partial.write_text(data, encoding="utf-8")
            os.replace(partial, target)
            return str(target)
        return _write_through_hadoop(report_dir.rstrip("/") + "/" + report_name(run_token), data)
    except Exception as exc:
        log.warning("could not leave the report in %s (%s); the report line is all there is", report_dir, exc)
        return None


def _write_through_hadoop(uri: str, data: str) -> str:
    from airflow_provider_deltacc.spark_jars.connect_mode import running_classic_session

    spark = running_classic_session()
    if spark is None:
        raise RuntimeError("no Spark session to write through")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    stream = fs.create(path, True)
    try:
        stream.write(bytearray(data.encode("utf-8")))
    finally:
        stream.close()
    return uri


def read_report(report_dir: str, run_token: str) -> tuple[int, dict[str, Any]] | None:
    """In the submitter: the exit code and report the driver left, or None when there is none.

    :param report_dir: the spec's ``outcome.report_dir``.
    :param run_token: the spec's ``outcome.run_token``.
    :raises Exception: whatever the storage raises other than "not found".
    """
    name = report_name(run_token)
    local = local_dir(report_dir)
    if local is not None:
        try:
            text = (local / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
    else:
        from deltalake.fs import DeltaStorageHandler

        handler = DeltaStorageHandler(report_dir.rstrip("/"))
        if handler.get_file_info([name])[0].type.name == "NotFound":
            return None
        with handler.open_input_file(name) as stream:
            text = stream.read().decode("utf-8")
    data = json.loads(text)
    code, report = data.get("exit_code"), data.get("report")
    if not isinstance(code, int) or not isinstance(report, dict):
        raise ValueError(f"{report_dir}/{name} is not a report the job wrote")
    return code, report


def remove_report(report_dir: str, run_token: str) -> None:
    """Delete the report once read (a missing one is fine).

    :param report_dir: the spec's ``outcome.report_dir``.
    :param run_token: the spec's ``outcome.run_token``.
    """
    name = report_name(run_token)
    local = local_dir(report_dir)
    if local is not None:
        (local / name).unlink(missing_ok=True)
        return
    from deltalake.fs import DeltaStorageHandler

    DeltaStorageHandler(report_dir.rstrip("/")).delete_file(name)
