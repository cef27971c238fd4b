"""DeltaCCHook without Spark: exit code + report -> outcome, the report line captured from spark-submit's
output stream (and kept out of the log), the submit environment, and the py-files bundle's contents."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.exceptions import DeltaCCInputError, DeltaConflictFatal, DeltaConflictRetryable
from airflow_provider_deltacc.hooks.bundle import build_bundle
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.job_exit import report_or_raise
from airflow_provider_deltacc.hooks.submit import ReportingSparkSubmitHook
from airflow_provider_deltacc.spark_job.report_line import format_report_line

pytestmark = pytest.mark.unit

COMMITTED = {"status": "committed", "table": "/t", "table_version": 3, "attempts": [{"number": 1}]}


def _failed(status: str, **error: Any) -> dict[str, Any]:
    conflict = {"kind": "append", "table": "/t", "partition": "[p=a]"}
    return {
        "status": status,
        "table": "/t",
        "attempts": [{"number": 1, "conflict": conflict}],
        "error": {"message": "boom", **error},
    }


def test_success_returns_the_report() -> None:
    assert report_or_raise(ExitCode.SUCCESS, COMMITTED) is COMMITTED


@pytest.mark.parametrize(
    ("code", "status", "exc_type"),
    [
        (ExitCode.CONFLICT_RETRYABLE, "retries_exhausted", DeltaConflictRetryable),
        (ExitCode.CONFLICT_FATAL, "conflict_fatal", DeltaConflictFatal),
        (ExitCode.BAD_INPUT, "bad_input", DeltaCCInputError),
    ],
)
def test_failure_codes_map_to_classified_exceptions(code: int, status: str, exc_type: type) -> None:
    report = _failed(status, field="options.keys", value="x")
    with pytest.raises(exc_type) as raised:
        report_or_raise(code, report)
    assert raised.value.report is report
    assert raised.value.conflict == {"kind": "append", "table": "/t", "partition": "[p=a]"}
    assert "boom" in str(raised.value)
    if exc_type is DeltaCCInputError:
        assert (raised.value.field, raised.value.value) == ("options.keys", "x")


def test_other_failures_are_plain_airflow_errors() -> None:
    with pytest.raises(AirflowException, match="exit code 1"):
        report_or_raise(ExitCode.FAILURE, _failed("error"))
    with pytest.raises(AirflowException, match="exit code 137"):
        report_or_raise(137, None)  # killed: no report line at all
    with pytest.raises(AirflowException, match="outcome is unknown: no report line"):
        report_or_raise(ExitCode.SUCCESS, None)


@pytest.fixture
def spark_conn(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_UNIT", "spark://spark-master:7077")
    return "deltacc_unit"


def test_report_line_is_captured_from_the_spark_submit_stream(spark_conn: str) -> None:
    hook = ReportingSparkSubmitHook(conn_id=spark_conn)
    logged: list[str] = []
    hook.log.info = lambda fmt, *args: logged.append(fmt % args if args else fmt)  # type: ignore[method-assign]
    stream = [
        "26/11/22 08:43:27 INFO SparkContext: Running Spark version 4.2.0\n",
        f"{format_report_line(COMMITTED)}\n",
        "26/11/22 08:43:40 INFO SparkContext: Successfully stopped SparkContext\n",
    ]
    hook._process_spark_submit_log(iter(stream))
    assert hook.report == COMMITTED
    assert not any("DELTACC_REPORT" in line for line in logged)
    assert any("Successfully stopped SparkContext" in line for line in logged)
    assert hook.returncode is None  # nothing was submitted


def test_submit_environment_uses_the_connection_and_pip_spark_home(
    spark_conn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    runner = DeltaCCHook(conn_id=spark_conn, driver_python="/opt/py/bin/python").submit_runner
    assert runner.connection_master == "spark://spark-master:7077"
    env = runner.driver_env(runner.connection_master)
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == "/opt/py/bin/python"
    assert (Path(env["SPARK_HOME"]) / "bin" / "spark-submit").exists()
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    assert "SPARK_HOME" not in runner.driver_env(runner.connection_master)


def test_a_spark_connect_connection_in_spark_submit_mode_is_bad_input_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_CONNECT_ONLY", "spark-connect://connect-host:15002")
    with pytest.raises(DeltaCCInputError) as raised:
        _ = DeltaCCHook(conn_id="deltacc_connect_only").submit_runner.connection_master
    assert raised.value.field == "conn_id" and raised.value.value == "deltacc_connect_only"
    assert "execution_mode='spark_connect'" in str(raised.value)


def test_unknown_connection_and_mode_are_input_errors() -> None:
    with pytest.raises(DeltaCCInputError) as raised:
        _ = DeltaCCHook(conn_id="no_such_conn_for_deltacc").submit_runner.connection_master
    assert raised.value.field == "conn_id"
    with pytest.raises(DeltaCCInputError):
        DeltaCCHook(execution_mode="yarn")  # type: ignore[arg-type]


def test_the_bundle_holds_only_the_packages_own_core(tmp_path: Path) -> None:
    core, deps = build_bundle(tmp_path)
    with zipfile.ZipFile(core) as archive:
        names = archive.namelist()
    assert names and all(n.endswith(".py") for n in names), names
    assert {n.split("/")[0] for n in names} == {"airflow_provider_deltacc"}
    second = {n.split("/")[1] for n in names}
    assert second == {
        "__init__.py",
        "contract",
        "occ",
        "engine",
        "spark_jars",
        "spark_job",
    }, second
    with zipfile.ZipFile(deps) as archive:
        assert {n.split("/")[0] for n in archive.namelist()} == {"tenacity"}
    assert build_bundle(tmp_path) == [core, deps]  # content-addressed: reused, not rebuilt


def test_a_databricks_connection_url_carries_the_cluster_id_header_beside_the_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pyspark.sql.connect.client import DefaultChannelBuilder

    from airflow_provider_deltacc.hooks.connect import SparkConnectRunner

    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_DATABRICKS",
        '{"conn_type": "spark_connect", "host": "adb-1234.5.azuredatabricks.net", "port": 443, "password": '
        '"dapi-secret", "extra": {"use_ssl": true, "x-databricks-cluster-id": "0123-456789-abc"}}',
    )
    url = SparkConnectRunner(conn_id="deltacc_databricks", job_name="j").url
    assert url == (
        "sc://adb-1234.5.azuredatabricks.net:443/;token=dapi-secret;use_ssl=True;"
        "x-databricks-cluster-id=0123-456789-abc"
    )
    builder = DefaultChannelBuilder(url)
    assert builder.secure and builder.token == "dapi-secret"
    assert ("x-databricks-cluster-id", "0123-456789-abc") in list(builder.metadata())


def test_refused_credentials_name_the_tasks_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver knows which credentials S3 refused, not the connection they came from: the hook names it,
    from the reason the job reported, without touching the rest of the message."""
    import json

    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_S3_TEAM",
        json.dumps(
            {"conn_type": "aws", "login": "AKIA", "password": "secret", "extra": {"region_name": "x"}}
        ),
    )
    reason = "S3 refused the credentials for bucket 'lake'; fix the task's aws_conn_id connection"
    report = _failed("bad_input", field="aws_conn_id", value=None, reason=reason)

    class RefusingRunner:
        def run(self, spec: Any, *, turns: Any = None) -> tuple[int, dict[str, Any]]:
            return ExitCode.BAD_INPUT, report

    hook = DeltaCCHook(execution_mode="in_process", aws_conn_id="deltacc_s3_team")
    hook.__dict__["runner"] = RefusingRunner()
    spec = {"operation": "append", "table": "s3a://lake/t", "source": {"kind": "sql", "query": "SELECT 1"}}
    with pytest.raises(DeltaCCInputError) as raised:
        hook.run(spec, consult_log=False)
    assert str(raised.value) == f"bad input: aws_conn_id='deltacc_s3_team': {reason}"
    assert (raised.value.field, raised.value.value, raised.value.report) == (
        "aws_conn_id",
        "deltacc_s3_team",
        report,
    )
