"""In the driver: leave the job's report where the spec's ``report_trail.report_dir`` says, for a submitter
that does not see the driver's stdout (see :mod:`airflow_provider_deltacc.contract.report_file`)."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from airflow_provider_deltacc.contract.report_file import local_dir, report_name, report_text

log = logging.getLogger(__name__)


def leave_report(spec_text: str | bytes, code: int, report: dict[str, Any]) -> str | None:
    """Write the report where the spec's ``report_trail.report_dir`` says; never raises (the report line is
    still printed, and the submitter falls back to the Delta log).

    :param spec_text: the job spec's JSON text.
    :param code: the job's exit code.
    :param report: the job's report.
    :returns: where it was written, or None.
    """
    try:
        trail = json.loads(spec_text).get("report_trail") or {}
        report_dir, run_token = trail.get("report_dir"), trail.get("run_token")
    except (ValueError, AttributeError):
        return None
    if not isinstance(report_dir, str) or not isinstance(run_token, str):
        return None
    data = report_text(code, report)
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
