"""The job is a Spark driver's: run as a plain process, with no session running and not under spark-submit,
it starts no JVM of its own and says how to run it (the in-process mode starts its session itself)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.spark_job.main import main
from airflow_provider_deltacc.spark_job.report_line import parse_report_line

pytestmark = pytest.mark.unit


def test_the_cli_outside_spark_submit_writes_nothing_and_says_to_use_spark_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    table = tmp_path / "table"
    spec = {
        "operation": "append",
        "table": str(table),
        "source": {"kind": "rows", "rows": [[1]], "schema": "id INT"},
    }
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec))

    code = main(["--spec", str(spec_file)])

    assert code == ExitCode.BAD_INPUT
    report = parse_report_line(capsys.readouterr().out.strip())
    assert report is not None and report["status"] == "bad_input"
    assert "spark-submit" in report["error"]["message"] and "in_process" in report["error"]["message"]
    assert not table.exists()
    from pyspark import SparkContext

    assert SparkContext._active_spark_context is None


def test_the_driver_drops_a_spark_connect_mark_it_inherited_before_the_job_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker thread running a spark_connect task holds pyspark's process-wide Connect mark; a spark-submit
    started meanwhile by another thread inherits it, and pyspark in the driver would build a Connect session
    (CONNECT_URL_NOT_SET) instead of the application's classic one."""
    import airflow_provider_deltacc.spark_job.main as job_main
    from airflow_provider_deltacc.spark_jars.connect_mode import CONNECT_MODE_ENV

    monkeypatch.setenv(CONNECT_MODE_ENV, "1")
    seen: list[bool] = []

    def run_job(text: str) -> tuple[ExitCode, dict[str, object]]:
        seen.append(CONNECT_MODE_ENV in os.environ)
        return ExitCode.SUCCESS, {"status": "committed"}

    monkeypatch.setattr(job_main, "run_job", run_job)
    monkeypatch.setattr(job_main, "leave_report", lambda *args: None)
    spec_file = tmp_path / "spec.json"
    spec_file.write_text("{}")

    assert main(["--spec", str(spec_file)]) == ExitCode.SUCCESS
    assert seen == [False]
