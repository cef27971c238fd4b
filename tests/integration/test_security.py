"""Security (issue #7): injected values stay data, and secrets never reach logs, errors or reports.

* Hostile strings in templated ``partition_values`` and ``equals`` are quoted as literals: on a real Delta
  table they match only a row that holds exactly that string, so the table is otherwise unchanged.
* A ``spark`` connection with a password and secret extras, and ``spark_conf`` holding S3 keys and a token,
  run through the operators in process and once through the real spark-submit path (local master). Every
  captured output is searched for the secrets: Python logging at DEBUG, the process's stdout/stderr (where
  spark-submit's output and the task's structured logs go), the XCom report, its ``DELTACC_REPORT`` line,
  error messages, the logged spark-submit command, and the rendered fields after Airflow's redaction.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.submit import ReportingSparkSubmitHook
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaDeleteOperator, DeltaUpdateOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.spark_job.report_line import format_report_line
from tests.support.airflow_runs import use_temp_lease_store
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SECRETS = {
    "password": "conn-pa55word-7731",
    "token": "conn-t0ken-5521",
    "keytab": base64.b64encode(b"keytab-bytes-9911").decode(),
    "s3_secret": "wJalrXUtnFEMI-K7MDENG-bPxRfiCY",
    "s3_access": "AKIAIOSFODNN7EXAMPLE",
    "session_token": "FwoGZXIvYXdzEXAMPLEt0k3n",
}
SPARK_CONF = {
    "spark.hadoop.fs.s3a.secret.key": SECRETS["s3_secret"],
    "spark.hadoop.fs.s3a.access.key": SECRETS["s3_access"],
    "spark.hadoop.fs.s3a.session.token": SECRETS["session_token"],
    "spark.sql.shuffle.partitions": "2",
}
CONN_ID = "deltacc_secret_conn"


def _connection_json(host: str) -> str:
    return json.dumps(
        {
            "conn_type": "spark",
            "host": host,
            "login": "svc-deltacc",
            "password": SECRETS["password"],
            "extra": {"token": SECRETS["token"], "deploy-mode": "client"},
        }
    )


def _assert_no_secret(where: str, text: str) -> None:
    for name, secret in SECRETS.items():
        assert secret not in text, f"the {name} secret leaked into {where}: ...{_around(text, secret)}..."


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    return text[max(0, at - 80) : at + len(secret) + 20]


# -- injection ----------------------------------------------------------------------------------------------


HOSTILE = {
    "quote": "x' OR '1'='1",
    "drop": "x'); DROP TABLE t; --",
    "env": "${env:DELTACC_SECURITY_SECRET}",
    "backslash": "back\\' OR 1=1 --",
}


def test_injection_in_templated_partition_values_and_equals_stays_data(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import DeltaTable

    use_temp_lease_store(tmp_path, monkeypatch)
    monkeypatch.setenv("DELTACC_SECURITY_SECRET", "env-s3cr3t")
    table = str(tmp_path / "t")
    rows = [(1, "a", "plain"), (2, "b", "plain"), (3, HOSTILE["env"], HOSTILE["env"])]
    spark.createDataFrame(rows, "id INT, part STRING, value STRING").write.format("delta").partitionBy(
        "part"
    ).save(table)

    def snapshot() -> tuple[int, list[tuple[Any, ...]]]:
        delta = DeltaTable(table)
        data = sorted((r["id"], r["part"], r["value"]) for r in delta.to_pyarrow_table().to_pylist())
        return delta.version(), data

    before = snapshot()
    context = make_context(task_id="inject", params=HOSTILE)
    common: dict[str, Any] = {"table": table, "execution_mode": "in_process", "retries": 0}
    # DELETE of hostile partitions and a hostile equals: matches nothing, commits nothing.
    delete = DeltaDeleteOperator(
        task_id="delete_hostile",
        partition_values=[{"part": "{{ params.quote }}"}, {"part": "{{ params.backslash }}"}],
        equals={"value": "{{ params.drop }}"},
        **common,
    )
    delete.render_template_fields(context)
    assert delete.partition_values == [{"part": HOSTILE["quote"]}, {"part": HOSTILE["backslash"]}]
    report = delete.execute(make_context(task_id="delete_hostile"))
    assert report["status"] in ("committed", "noop"), report
    assert snapshot() == before

    # A value that looks like a substitution is a literal: it updates only the row holding that text, and
    # the environment variable is never read into the table.
    update = DeltaUpdateOperator(
        task_id="update_env",
        equals={"value": "{{ params.env }}"},
        partition_values=[{"part": "{{ params.env }}"}],
        set_values={"value": "{{ params.quote }}"},
        **common,
    )
    update.render_template_fields(context)
    update.execute(make_context(task_id="update_env"))
    version, data = snapshot()
    assert version == before[0] + 1
    assert data == [(1, "a", "plain"), (2, "b", "plain"), (3, HOSTILE["env"], HOSTILE["quote"])]
    assert not any("env-s3cr3t" in str(cell) for row in data for cell in row)


# -- secrets ------------------------------------------------------------------------------------------------


def _collect(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], context: Any, errors: list[str]
) -> dict[str, str]:
    out, err = capfd.readouterr()
    pushed = context["ti"].pushed
    report = pushed.get(REPORT_XCOM_KEY) or {}
    return {
        "python logging (DEBUG)": caplog.text,
        "stdout": out,
        "stderr": err,
        "the XCom report": json.dumps(pushed, default=str),
        "the DELTACC_REPORT line": format_report_line(report) if report else "",
        "error messages": "\n".join(errors),
    }


def test_secrets_stay_out_of_logs_errors_and_reports_in_process(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from airflow.sdk._shared.secrets_masker import redact

    use_temp_lease_store(tmp_path, monkeypatch)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", _connection_json("local[1]"))
    caplog.set_level(logging.DEBUG)
    table = str(tmp_path / "orders")
    context = make_context(task_id="append_secret")
    append = DeltaAppendOperator(
        task_id="append_secret",
        table=table,
        source={"kind": "rows", "rows": [[1, "a"]], "schema": "id INT, p STRING"},
        partition_by=["p"],
        conn_id=CONN_ID,
        execution_mode="in_process",
        spark_conf={**SPARK_CONF, "spark.app.deltacc.day": "{{ ds }}"},
        retries=0,
    )
    append.render_template_fields(context)
    # Airflow's redaction of the rendered fields (what the UI shows) hides every sensitive value.
    rendered = json.dumps(redact(append.spark_conf, "spark_conf"))
    _assert_no_secret("the rendered spark_conf", rendered)
    assert "2026-11-20" in rendered  # the non-secret setting is still shown
    append.execute(context)

    errors: list[str] = []
    bad = DeltaDeleteOperator(
        task_id="delete_secret",
        table=table,
        condition="no_such_column = 1",
        conn_id=CONN_ID,
        execution_mode="in_process",
        spark_conf=SPARK_CONF,
        retries=0,
    )
    bad_context = make_context(task_id="delete_secret")
    with pytest.raises(DeltaCCInputError) as raised:
        bad.execute(bad_context)
    errors.append(str(raised.value))
    errors.append(json.dumps(raised.value.report, default=str))

    captured = _collect(caplog, capfd, context, errors)
    assert context["ti"].pushed[REPORT_XCOM_KEY]["status"] == "committed"
    assert (
        "Running Delta APPEND" in captured["python logging (DEBUG)"] + captured["stdout"] + captured["stderr"]
    )
    for where, text in captured.items():
        _assert_no_secret(where, text)


def test_secrets_stay_out_of_the_spark_submit_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The real path: spark-submit with a local master runs the bundled job in its own driver JVM."""
    from deltalake import DeltaTable

    use_temp_lease_store(tmp_path, monkeypatch)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", _connection_json("local[1]"))
    caplog.set_level(logging.DEBUG)
    table = str(tmp_path / "orders")
    context = make_context(task_id="submit_secret")
    append = DeltaAppendOperator(
        task_id="submit_secret",
        table=table,
        source={"kind": "rows", "rows": [[1, "a"], [2, "b"]], "schema": "id INT, p STRING"},
        conn_id=CONN_ID,
        execution_mode="spark_submit",
        spark_conf=SPARK_CONF,
        driver_python=sys.executable,
        submit_options={"driver_memory": "512m"},
        retries=0,
    )
    report = append.execute(context)
    assert report["status"] == "committed", report
    assert DeltaTable(table).version() == 0

    captured = _collect(caplog, capfd, context, [])
    logged = captured["python logging (DEBUG)"] + captured["stdout"] + captured["stderr"]
    assert "Spark-Submit cmd" in logged, "the submit command was not captured"
    assert "spark.hadoop.fs.s3a.access.key=***" in logged  # the key is shown, its value is not
    for where, text in captured.items():
        _assert_no_secret(where, text)


def test_keytab_and_token_extras_stay_out_of_the_logged_submit_command(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """Kerberos extras (a base64 keytab, a principal) and a token: the command the hook logs masks them."""
    extra = {"keytab": SECRETS["keytab"], "principal": "svc@EXAMPLE.COM", "token": SECRETS["token"]}
    conn = {"conn_type": "spark", "host": "yarn", "password": SECRETS["password"], "extra": extra}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    caplog.set_level(logging.DEBUG)
    delta_hook = DeltaCCHook(conn_id=CONN_ID, spark_conf=SPARK_CONF)
    runner = delta_hook.submit_runner
    _ = runner.connection_master
    hook = runner.submit_hook_for(
        conn_id=CONN_ID, conf=SPARK_CONF, application_args=["--spec", "/tmp/spec.json"], name="deltacc-test"
    )
    hook.secrets = [*runner.connection_secrets]
    command = hook._build_spark_submit_command("/app/__main__.py")
    assert "--keytab" in command and SPARK_CONF["spark.hadoop.fs.s3a.secret.key"] in " ".join(command)
    assert SECRETS["password"] in runner.connection_secrets and SECRETS["token"] in runner.connection_secrets
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    _assert_no_secret("the logged spark-submit command", logged)
    assert "Spark-Submit cmd" in logged and "--principal svc@EXAMPLE.COM" in logged
    # spark-submit's own output is redacted line by line, too
    lines = list(hook._without_report(iter([f"connecting with token {SECRETS['token']}\n", "done\n"])))
    assert lines == ["connecting with token ***\n", "done\n"]
    assert isinstance(hook, ReportingSparkSubmitHook)
