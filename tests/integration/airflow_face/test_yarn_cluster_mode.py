"""``deploy_mode=cluster`` on a real YARN cluster (Hadoop's MiniYARNCluster on 127.0.0.1, see
:mod:`tests.support.mini_yarn`): the driver runs in a YARN container, so its report line never reaches the
task. Real ``dag.test()`` runs of a 1-row append:

* the task reads the report the driver left beside the table (the default report directory) and succeeds
  with the driver's own report;
* with a report directory the driver cannot write, the task finds the run's tagged commit in the Delta log.

Both runs submit the spec with ``--files`` (the worker's temporary file is not on the driver's machine).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.support.airflow_runs import xcom_value
from tests.support.mini_yarn import mini_yarn_cluster, yarn_client_env, yarn_spark_conf
from tests.support.one_row_append import (
    APPENDED,
    SEEDED,
    TASK_ID,
    append_one_row,
    seed_events_table,
    table_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(4)]

CONN_ID = "deltacc_yarn_cluster"


@pytest.fixture(scope="module")
def yarn_conf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with mini_yarn_cluster(tmp_path_factory.mktemp("mini-yarn")) as conf_dir:
        yield conf_dir


@pytest.fixture
def yarn_cluster_conn(yarn_conf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(yarn_conf))
    for key, value in yarn_client_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    conn = {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(conn))
    monkeypatch.delenv("AIRFLOW__DELTACC__REPORT_DIR", raising=False)
    return CONN_ID


@pytest.fixture
def seeded_table(tmp_path: Path) -> str:
    return seed_events_table(str(tmp_path / "lake" / "events"))


def _append_one_row(
    dag_id: str,
    table: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> tuple[Any, str]:
    return append_one_row(
        dag_id,
        table,
        tmp_path,
        caplog,
        capfd,
        conn_id=CONN_ID,
        driver_python=sys.executable,
        spark_conf=yarn_spark_conf(),
    )


def test_a_yarn_cluster_mode_task_reads_the_report_its_driver_left_beside_the_table(
    airflow_db: Path,
    yarn_cluster_conn: str,
    seeded_table: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    dr, log = _append_one_row("deltacc_test_yarn_report", seeded_table, tmp_path, caplog, capfd)

    assert str(dr.state) == "success", log
    assert "--deploy-mode cluster" in log and "--master yarn" in log
    assert "final status: SUCCEEDED" in log  # spark-submit followed the YARN application
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 1), report
    assert report["metrics"]["answered_by"] == "report-file", report
    report_dir = tmp_path / "lake" / "_deltacc_reports"
    assert f"read the report it left in {report_dir}" in log
    assert report_dir.is_dir() and not list(report_dir.iterdir())
    assert table_rows(seeded_table) == [*SEEDED, APPENDED]


def test_a_yarn_cluster_mode_task_without_the_report_learns_its_commit_from_the_delta_log(
    airflow_db: Path,
    yarn_cluster_conn: str,
    seeded_table: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("the driver cannot create a directory under a file")
    monkeypatch.setenv("AIRFLOW__DELTACC__REPORT_DIR", str(blocker / "reports"))
    dr, log = _append_one_row("deltacc_test_yarn_log", seeded_table, tmp_path, caplog, capfd)

    assert str(dr.state) == "success", log
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 1), report
    assert report["metrics"]["answered_by"] == "delta-log", report
    assert report["metrics"]["commit_versions"] == [1] and report["metrics"]["numOutputRows"] == 1, report
    assert table_rows(seeded_table) == [*SEEDED, APPENDED]
