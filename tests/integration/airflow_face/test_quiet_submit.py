"""A quiet spark-submit, read from the task log of real ``dag.test()`` runs: a 1-row append that spark-submit
runs on a ``local[1]`` master, with a real conflict (a rival commit by delta-rs while the driver's first
attempt is held), logs fewer than 100 lines, and still logs the conflict, the job's summary and the
operator's report. ``spark_log_level="INFO"`` brings Spark's own lines back, from the JVM's start on, and an
explicit ``spark.ui.enabled=true`` in ``spark_conf`` wins over the small-job defaults."""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.operators import DeltaAppendOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.operators.report_lines import conflict_log_line
from tests.support.airflow_runs import serialize_dag, task_log_lines, xcom_value
from tests.support.submit_hold import rival_during_submit

pytestmark = pytest.mark.integration

CONN_ID = "deltacc_quiet_local"
TASK_ID = "append_one_row"
SCHEMA = "id INT, p STRING, v STRING"
#: A line of Spark's own log4j output at INFO (Spark's console layout: ``yy/MM/dd HH:mm:ss LEVEL``).
SPARK_INFO_RE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ")
#: A frame of a JVM stack trace.
JVM_FRAME_RE = re.compile(r"\sat (?:org|java|scala|io)\.[\w.$]+\(")
SUBMIT_CMD = "Spark-Submit cmd: "


@pytest.fixture
def local_conn(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    return CONN_ID


def _append_one_row(
    dag_id: str,
    table: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    **operator_kwargs: Any,
) -> tuple[Any, list[str]]:
    """Run a one-task DAG (a 1-row append through spark-submit) with ``dag.test()``; return the run and the
    task's log lines."""
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaAppendOperator(
            task_id=TASK_ID,
            table=table,
            source={"kind": "rows", "rows": [[7, "a", "new"]], "schema": SCHEMA},
            conn_id=CONN_ID,
            execution_mode="spark_submit",
            retries=0,
            **operator_kwargs,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    caplog.set_level(logging.INFO)
    caplog.clear()
    capfd.readouterr()
    dr = dag.test()
    return dr, task_log_lines(capfd.readouterr().out, caplog.records)


def _submit_command(log: list[str]) -> str:
    commands = [line for line in log if SUBMIT_CMD in line]
    assert len(commands) == 1, commands  # the command line is logged once
    return commands[0].split(SUBMIT_CMD, 1)[1]


def test_a_one_row_append_with_a_conflict_logs_under_100_lines(
    airflow_db: Path,
    local_conn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    table = str(tmp_path / "events")
    seed = {"id": pa.array([1, 2], pa.int32()), "p": ["a", "b"], "v": ["old", "old"]}
    write_deltalake(table, pa.table(seed), partition_by=["p"])

    def change_the_table_properties() -> None:
        DeltaTable(table).alter.set_table_properties({"delta.logRetentionDuration": "interval 31 days"})

    with rival_during_submit(tmp_path, monkeypatch, change_the_table_properties, gate_column="id"):
        dr, log = _append_one_row("deltacc_test_quiet_submit", table, tmp_path, caplog, capfd)

    text = "\n".join(log)
    assert str(dr.state) == "success", text
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 2), report
    kinds = [(attempt.get("conflict") or {}).get("kind") for attempt in report["attempts"]]
    assert kinds == ["metadata_changed", None], report
    rows = sorted((r["id"], r["p"], r["v"]) for r in DeltaTable(table).to_pyarrow_table().to_pylist())
    assert rows == [(1, "a", "old"), (2, "b", "old"), (7, "a", "new")]

    assert len(log) < 100, f"{len(log)} lines in the task log:\n{text}"
    # The operator's report line and conflict line, the job's own conflict line and summary line.
    report_line = f"Delta APPEND on {table}: status=committed version=2 attempts=2 conflicts=1"
    assert sum(report_line in line for line in log) == 1, text
    assert sum(conflict_log_line(report, report["attempts"][0], table) in line for line in log) == 1, text
    assert sum("Delta conflict METADATA_CHANGED on table" in line for line in log) == 1, text
    assert sum(report["summary"] in line for line in log) == 1, text
    # Spark's INFO lines (from the JVM's start on) and Delta's stack trace of the handled conflict are gone.
    assert not [line for line in log if SPARK_INFO_RE.search(line)], text
    assert not [line for line in log if JVM_FRAME_RE.search(line)], text
    command = _submit_command(log)
    for setting in ("spark.ui.enabled=false", "spark.sql.shuffle.partitions=1", "snapshotPartitions=1"):
        assert setting in command, command


def test_spark_log_level_info_brings_spark_lines_back_and_spark_conf_wins(
    airflow_db: Path,
    local_conn: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    table = str(tmp_path / "events")
    dr, log = _append_one_row(
        "deltacc_test_loud_submit",
        table,
        tmp_path,
        caplog,
        capfd,
        spark_log_level="INFO",
        spark_conf={"spark.ui.enabled": "true"},
    )

    text = "\n".join(log)
    assert str(dr.state) == "success", text
    spark_info = [line for line in log if SPARK_INFO_RE.search(line)]
    # The JVM's start-up lines come back, and the Spark UI the explicit setting asked for really started.
    assert any("INFO SparkContext: Running Spark version" in line for line in spark_info), text
    assert any("Successfully started service 'SparkUI'" in line for line in spark_info), text
    assert len(log) > 100, f"only {len(log)} lines at INFO"
    command = _submit_command(log)
    assert "spark.ui.enabled=true" in command and "spark.ui.enabled=false" not in command, command
    assert "spark.sql.shuffle.partitions=1" in command, command  # the other defaults still apply
    assert sum(xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)["summary"] in line for line in log) == 1, text
