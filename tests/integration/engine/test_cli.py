"""The CLI as spark-submit runs it (its own driver JVM, the bundle as py-files, the cached Delta jars): one
report line and the exit code (spark-submit merges the Python driver's stderr, its log, into its stdout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_deltacc.hooks.bundle import build_bundle
from airflow_provider_deltacc.hooks.submit import spark_job_application
from airflow_provider_deltacc.spark_jars.delta_jars import cached_jars
from airflow_provider_deltacc.spark_job.report_line import REPORT_PREFIX, parse_report_line

pytestmark = pytest.mark.integration


def test_cli_under_spark_submit_appends_and_prints_one_report_line(tmp_path: Path) -> None:
    table = tmp_path / "table"
    spec = {
        "operation": "append",
        "table": str(table),
        "source": {"kind": "rows", "rows": [[1, "2026-11-20"]], "schema": "id INT, date DATE"},
        "options": {"partition_by": ["date"]},
        "txn": {"app_id": "cli", "version": 1},
    }
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))
    jars = [str(path) for path in cached_jars()]
    py_files = [str(path) for path in build_bundle(tmp_path / "bundle")] + [jars[0]]
    # fmt: off
    command = [
        str(Path(sys.executable).with_name("spark-submit")),
        "--master", "local[1]",
        "--jars", ",".join(jars),
        "--py-files", ",".join(py_files),
        str(spark_job_application()),
        "--spec", str(spec_file),
    ]
    # fmt: on
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        timeout=300,
    )
    reports = [line for line in result.stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(reports) == 1, result.stdout
    report = parse_report_line(reports[0])
    assert report is not None
    assert report["status"] == "committed" and report["table_version"] == 0
    assert report["txn_app_id"] == "cli" and report["operation"] == "APPEND"
    assert (table / "_delta_log").is_dir()
