"""Infrastructure faults on real processes, retried by Airflow under ``dag.test()``.

(a) A ``spark`` connection to a standalone master that is down: the first try fails as infrastructure, its
retry reason names the master and the connection, and Airflow retries after the task's own delay; the
master (and a worker) starts in the retry callback, and the second try commits. (b) A spark-submit driver
SIGKILLed mid-run (held at a gate after reading its snapshot, before its commit): infrastructure, retried,
and the re-run commits once. (c) A gated OPTIMIZE whose PostgreSQL lease store is stopped: infrastructure,
its reason names the store without its password, nothing is compacted unguarded; the store starts in the
retry callback and the second try compacts under its lease. The tables are checked with delta-rs.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil
import pytest

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.support.airflow_runs import serialize_dag, try_history, xcom_value
from tests.support.postgres import PostgresServer
from tests.support.spark_standalone import StandaloneCluster
from tests.support.submit_hold import rival_during_submit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2.5)]

SCHEMA = "id INT, p STRING, v STRING"
TASK_ID = "append"


def _one_append_dag(dag_id: str, table: str, tmp_path: Path, **operator_kwargs: Any) -> Any:
    """A DAG of one 1-row append through spark-submit, retried once after 1 s; serialized for dag.test()."""
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaAppendOperator(
            task_id=TASK_ID,
            table=table,
            source={"kind": "rows", "rows": [[7, "a", "new"]], "schema": SCHEMA},
            execution_mode="spark_submit",
            driver_python=sys.executable,
            retries=1,
            retry_delay=timedelta(seconds=1),
            **operator_kwargs,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    return dag


def _rows(table: str) -> list[tuple[Any, ...]]:
    from deltalake import DeltaTable

    return sorted((r["id"], r["p"], r["v"]) for r in DeltaTable(table).to_pyarrow_table().to_pylist())


def _first_try_reason(dr: Any) -> tuple[str, Any]:
    [first] = try_history(dr)[TASK_ID]
    assert (first.try_number, str(first.state)) == (1, "failed")
    return first.retry_reason or "", first.retry_delay_override


def test_a_master_that_is_down_fails_the_try_as_infrastructure_and_the_retry_commits(
    airflow_db: Path,
    standalone_cluster: StandaloneCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn_id = "deltacc_master_down"
    master = standalone_cluster.master_url
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", master)
    table = str(tmp_path / "events")
    started_in_callback: list[bool] = []

    def start_the_master(context: Any) -> None:
        standalone_cluster.start()
        started_in_callback.append(True)

    dag = _one_append_dag(
        "deltacc_test_master_down",
        table,
        tmp_path,
        conn_id=conn_id,
        submit_options={"driver_memory": "512m", "executor_memory": "512m", "total_executor_cores": 1},
        on_retry_callback=start_the_master,
    )
    assert not standalone_cluster.running
    dr = dag.test()

    [ti] = dr.get_task_instances()
    assert (str(ti.state), ti.try_number) == ("success", 2)
    assert started_in_callback == [True]
    reason, delay = _first_try_reason(dr)
    assert reason.startswith(
        f"Spark master {master} (conn_id='{conn_id}') unreachable: Airflow try 2 of 2 starts after"
    ), reason
    assert "ConnectionRefusedError" in reason
    assert delay is None  # the task's own retry_delay
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 0), report
    assert _rows(table) == [(7, "a", "new")]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # gone, or a zombie of an earlier run
        return []


def _kill_the_driver_jvm(job_name: str, killed: list[psutil.Process]) -> None:
    """SIGKILL the spark-submit JVM (the driver, in client mode) running ``job_name``, as a cluster's OOM
    killer would; note the processes it leaves behind."""
    drivers = [
        process
        for process in psutil.Process().children(recursive=True)
        if {"org.apache.spark.deploy.SparkSubmit", job_name} <= set(_cmdline(process))
    ]
    assert len(drivers) == 1, drivers
    [jvm] = drivers
    killed.extend([jvm, *jvm.children(recursive=True)])
    jvm.send_signal(signal.SIGKILL)
    _wait_until_dead(jvm)


def _wait_until_dead(process: psutil.Process, timeout_s: float = 30) -> None:
    """Wait until ``process`` has died, without reaping it: it is a child of this process (``dag.test()``
    runs the task here), and the task's own ``Popen.wait()`` must read its exit status (a child reaped by
    someone else reads as exit status 0)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)
    raise TimeoutError(f"process {process.pid} still alive {timeout_s} s after SIGKILL")


def test_a_driver_killed_mid_run_is_infrastructure_and_the_rerun_commits_once(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    conn_id = "deltacc_killed_driver"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    table = str(tmp_path / "events")
    seed = {"id": pa.array([1, 2], pa.int32()), "p": ["a", "b"], "v": ["old", "old"]}
    write_deltalake(table, pa.table(seed), partition_by=["p"])
    dag_id = "deltacc_test_killed_driver"
    dag = _one_append_dag(dag_id, table, tmp_path, conn_id=conn_id)
    killed: list[psutil.Process] = []

    try:
        # The first try's driver reads its snapshot and waits at the gate; the test kills its JVM there.
        with rival_during_submit(
            tmp_path,
            monkeypatch,
            lambda: _kill_the_driver_jvm(f"deltacc-{dag_id}-{TASK_ID}", killed),
            gate_column="id",
        ):
            dr = dag.test()
    finally:
        _gone, alive = psutil.wait_procs(killed, timeout=30)
        for process in alive:  # the driver's Python processes, orphaned by the JVM
            process.kill()

    [ti] = dr.get_task_instances()
    assert (str(ti.state), ti.try_number) == ("success", 2)
    assert killed, "no driver was killed"
    reason, delay = _first_try_reason(dr)
    # Who notices first races: spark-submit ending by the signal, or the driver's Python losing its JVM
    # (it then leaves an UNAVAILABLE report in report_dir). Either way the JVM is named as unreachable.
    killed_reason = (
        f"the Spark driver JVM (killed by SIGKILL; conn_id='{conn_id}') unreachable: "
        "Airflow try 2 of 2 starts after"
    )
    lost_reason = "the Spark driver JVM unreachable: Airflow try 2 of 2 starts after the task's retry delay. "
    assert reason.startswith((killed_reason, lost_reason)), reason
    if reason.startswith(killed_reason):
        assert "the re-run finds its txn identity and skips the write" in reason
    else:
        assert "Spark went away while the job ran" in reason
    assert delay is None
    report = xcom_value(dr, TASK_ID, REPORT_XCOM_KEY)
    assert (report["status"], report["table_version"]) == ("committed", 1), report
    # The killed driver wrote nothing to the log; the re-run committed the row once.
    assert DeltaTable(table).version() == 1
    assert _rows(table) == [(1, "a", "old"), (2, "b", "old"), (7, "a", "new")]


def test_a_lease_store_that_is_down_fails_a_gated_optimize_as_infrastructure_and_the_retry_compacts(
    airflow_db: Path,
    spark: SparkSession,
    stoppable_postgres: tuple[PostgresServer, str],
    tmp_path: Path,
) -> None:
    import pyarrow as pa
    from airflow.sdk import DAG
    from deltalake import DeltaTable, write_deltalake
    from sqlalchemy import make_url

    from airflow_provider_deltacc.leases import mask_url, store_from_url

    table = str(tmp_path / "events")
    for ids in ([1, 2], [3, 4], [5, 6]):  # three small files in each partition, for OPTIMIZE to compact
        rows = {"id": pa.array(ids, pa.int32()), "p": ["a", "b"], "v": ["old", "old"]}
        write_deltalake(table, pa.table(rows), partition_by=["p"], mode="append")
    store, store_url = stoppable_postgres
    password = make_url(store_url).password
    assert password
    store.halt()
    started_in_callback: list[bool] = []

    def start_the_store(context: Any) -> None:
        store.start()
        started_in_callback.append(True)

    with DAG("deltacc_test_store_down", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaOptimizeOperator(
            task_id="optimize",
            table=table,
            lease_store_url=store_url,
            execution_mode="in_process",
            retries=1,
            retry_delay=timedelta(seconds=1),
            on_retry_callback=start_the_store,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    dr = dag.test()

    [ti] = dr.get_task_instances()
    assert (str(ti.state), ti.try_number) == ("success", 2)
    assert started_in_callback == [True]
    [first] = try_history(dr)["optimize"]
    assert (first.try_number, str(first.state)) == (1, "failed")
    reason = first.retry_reason or ""
    expected = f"lease store {mask_url(store_url)} unreachable: Airflow try 2 of 2 starts after"
    assert reason.startswith(expected), reason
    assert "Maintenance does not run without the lease store" in reason
    assert password not in reason and "***" in reason
    assert first.retry_delay_override is None
    # The first try did not compact anything unguarded: one OPTIMIZE, by the second try, under its lease.
    history = DeltaTable(table).history()
    assert [entry["operation"] for entry in history].count("OPTIMIZE") == 1
    assert history[0]["operation"] == "OPTIMIZE"
    report = xcom_value(dr, "optimize", REPORT_XCOM_KEY)
    assert report["status"] == "committed", report
    with store_from_url(store_url) as leases:
        [lease] = leases.history(table)
    assert (lease.holder, lease.op_kind.name) == (f"deltacc_test_store_down.optimize/{dr.run_id}", "OPTIMIZE")
