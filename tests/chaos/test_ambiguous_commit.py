"""Ambiguous commits: a Spark driver killed after its commit, before its report; the re-run finds the commit.

The victim runs the real CLI (``python -m airflow_provider_deltacc.spark_job --spec ...``'s ``main``) in its
own process group and SIGKILLs that group (driver, JVM, Python workers) the moment the CLI starts to print
its report line. The outcome is unknown to the caller; the re-runs with the same txn identity (in-process
``run_job``, and the hook in ``in_process`` mode) must find the commit in the Delta log and not write again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.spark_job.main import run_job
from tests.chaos.workload import ROOT, Transfer, create_tables, kill_group, transfer_spec
from tests.chaos.workload import ChaosConfig as _Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

CFG = _Config(branches=2, accounts_per_branch=2, transfers=2, faults=0, process_kills=0, lease_kills=0)


def _balances(path: str) -> dict[str, int]:
    rows = DeltaTable(path).to_pyarrow_table(columns=["account", "balance"]).to_pylist()
    return {r["account"]: r["balance"] for r in rows}


def test_driver_killed_after_commit_rerun_skips_the_duplicate(spark: SparkSession, tmp_path: Path) -> None:
    accounts, log_table = str(tmp_path / "accounts"), str(tmp_path / "transfer_log")
    create_tables(spark, accounts, log_table, CFG)
    transfer = Transfer("t0001", "b00", "b00-a0", "b01", "b01-a1", 37)
    spec = transfer_spec(accounts, transfer)
    app_id = spec["txn"]["app_id"]
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    before = DeltaTable(accounts).version()

    stderr_path = tmp_path / "victim.log"
    with open(stderr_path, "w", encoding="utf-8") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.chaos.victim", "--spec", str(spec_file), "--die-at-report"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=400)
        finally:
            kill_group(proc)
    log_text = stderr_path.read_text(encoding="utf-8", errors="replace")
    assert proc.returncode == -signal.SIGKILL, log_text[-3000:]
    assert "CHAOS_DYING at_report" in log_text
    assert "DELTACC_REPORT" not in out  # the caller never learnt the outcome

    # The commit did land: one MERGE, recorded under the identity, money moved once.
    table = DeltaTable(accounts)
    landed = table.version()
    assert landed == before + 1
    assert table.history(1)[0]["operation"] == "MERGE"
    assert table.transaction_version(app_id) == 1
    balances = _balances(accounts)
    assert balances["b00-a0"] == 1000 - 37 and balances["b01-a1"] == 1000 + 37

    # The re-run with the same identity finds it in the log and writes nothing.
    code, report = run_job(spec, spark)
    assert code == ExitCode.SUCCESS, report
    assert report["status"] == "skipped_duplicate" and report["skipped_duplicate"] is True
    assert report["metrics"]["recorded_txn_version"] == 1
    assert report["metrics"]["committed_version"] == landed
    assert report["table_version"] == landed
    assert [a["outcome"] for a in report["attempts"]] == ["skipped_duplicate"]

    # The same through the Airflow hook's in-process mode.
    from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook

    hooked = DeltaCCHook(execution_mode="in_process").run(spec)
    assert hooked["status"] == "skipped_duplicate"
    assert hooked["metrics"]["committed_version"] == landed

    assert DeltaTable(accounts).version() == landed
    assert _balances(accounts) == balances


def test_a_job_finds_its_own_commit_in_the_log_not_the_history(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit tag is looked up in the commit files (DeltaLog.getChanges), not with DESCRIBE HISTORY."""
    from airflow_provider_deltacc.engine import backend_jvm

    def no_history(*args: object) -> object:
        raise AssertionError("fell back to DESCRIBE HISTORY: DeltaLog.getChanges was not callable")

    accounts, log_table = str(tmp_path / "accounts"), str(tmp_path / "transfer_log")
    create_tables(spark, accounts, log_table, CFG)
    monkeypatch.setattr(backend_jvm, "history_commits", no_history)
    code, report = run_job(
        transfer_spec(accounts, Transfer("t0002", "b00", "b00-a1", "b00", "b00-a0", 5)), spark
    )
    assert code == ExitCode.SUCCESS, report
    assert report["status"] == "committed"
    assert (
        report["metrics"]["commit_versions"] == [report["table_version"]] == [DeltaTable(accounts).version()]
    )
