"""A task learns what its spark-submit job really did when the job's report line never reaches it, as in
cluster deploy mode (the driver's stdout stays in the cluster's logs). Real ``dag.test()`` runs of a 1-row
append that spark-submit runs on a ``local[1]`` master, with a stand-in around the real job in the driver
(:mod:`tests.support.lost_report`):

* the line is lost: the task reads the report the driver left in its report directory;
* the driver is SIGKILLed right after its commit (no report file, no line): the task finds the run's tagged
  commit in the Delta log and succeeds with it, and nothing is written twice;
* a conflict outlasts the in-job retries and the line is lost: the task fails with the conflict the driver
  reported, not with "no report line".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.support.airflow_runs import xcom_value
from tests.support.lost_report import lose_the_report
from tests.support.one_row_append import (
    APPENDED,
    SEEDED,
    TASK_ID,
    append_one_row,
    seed_events_table,
    table_rows,
)
from tests.support.submit_hold import rival_during_submit

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2)]

CONN_ID = "deltacc_lost_report_local"


@pytest.fixture
def local_conn(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    return CONN_ID


@pytest.fixture
def seeded_table(tmp_path: Path) -> str:
    return seed_events_table(str(tmp_path / "lake" / "events"))


def _user_metadata(table: str, version: int) -> str:
    from deltalake import DeltaTable

    [commit] = [c for c in DeltaTable(table).history() if c["version"] == version]
    return str(commit.get("userMetadata"))


def test_a_lost_report_line_is_read_from_the_report_the_driver_left(
    airflow_db: Path,
    local_conn: str,
    seeded_table: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    report_dir = tmp_path / "reports"
    monkeypatch.setenv("AIRFLOW__DELTACC__REPORT_DIR", str(report_dir))
    lose_the_report(monkeypatch, "line")
    dr, log = append_one_row("deltacc_test_lost_line", seeded_table, tmp_path, caplog, capfd, conn_id=CONN_ID)

    assert str(dr.state) == "success", log
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 1), report
    assert report["metrics"]["answered_by"] == "report-file", report
    assert len(report["attempts"]) == 1 and report["metrics"]["commit_versions"] == [1], report
    assert f"read the report it left in {report_dir}" in log
    assert table_rows(seeded_table) == [*SEEDED, APPENDED]
    assert report_dir.is_dir() and not list(report_dir.iterdir())  # read once, then removed


def test_a_driver_killed_right_after_its_commit_is_answered_from_the_delta_log(
    airflow_db: Path,
    local_conn: str,
    seeded_table: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    lose_the_report(monkeypatch, "kill_after_commit")
    dr, log = append_one_row(
        "deltacc_test_killed_after_commit", seeded_table, tmp_path, caplog, capfd, conn_id=CONN_ID
    )

    assert str(dr.state) == "success", log
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 1), report
    assert report["metrics"]["answered_by"] == "delta-log", report
    assert report["metrics"]["commit_versions"] == [1], report
    assert report["metrics"]["numOutputRows"] == 1, report
    assert "the Delta log holds its commits" in log
    assert _user_metadata(seeded_table, 1).startswith("deltacc:")
    assert table_rows(seeded_table) == [*SEEDED, APPENDED]  # written once


def test_a_conflict_whose_report_line_is_lost_fails_the_task_with_that_conflict(
    airflow_db: Path,
    local_conn: str,
    seeded_table: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from deltalake import DeltaTable

    def change_the_table_properties() -> None:
        DeltaTable(seeded_table).alter.set_table_properties(
            {"delta.logRetentionDuration": "interval 31 days"}
        )

    with rival_during_submit(tmp_path, monkeypatch, change_the_table_properties, gate_column="id"):
        lose_the_report(monkeypatch, "line")
        dr, log = append_one_row(
            "deltacc_test_lost_conflict",
            seeded_table,
            tmp_path,
            caplog,
            capfd,
            conn_id=CONN_ID,
            commit_retry={"max_attempts": 1},
        )

    assert str(dr.state) == "failed", log
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert report["status"] == "conflict_exhausted", report
    assert report["metrics"]["answered_by"] == "report-file", report
    [attempt] = report["attempts"]
    assert attempt["conflict"]["kind"] == "metadata_changed", report
    assert "Delta conflict outlasted the in-job retries" in log
    assert "printed no report line" not in log and "outcome is unknown" not in log
    assert table_rows(seeded_table) == SEEDED  # the rival's property change is version 1; no row was written
    assert DeltaTable(seeded_table).version() == 1
