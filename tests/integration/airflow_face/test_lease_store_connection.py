"""The lease store named by an Airflow connection, through ``dag.test()`` with real Spark and Delta: a writer
(store from ``[deltacc] lease_store_conn_id``) then a deferred, gated OPTIMIZE (store from its own
``lease_store_conn_id``, which the trigger resolves itself) leave their leases in the connection's store, and
nowhere else. Also ``airflow config list`` showing the ``[deltacc]`` section."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import (
    LeaseRequest,
    LeaseStore,
    PostgresLeaseStore,
    SqliteLeaseStore,
    store_from_url,
)
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator
from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger
from tests.support.airflow_runs import serialize_dag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

CONN_ID = "deltacc_leases"
SCHEMA = "id INT, p STRING"


def _postgres_connection(postgres_url: str) -> dict[str, Any]:
    from sqlalchemy import make_url

    url = make_url(postgres_url)
    return {
        "conn_type": "postgres",
        "host": url.host,
        "port": url.port,
        "login": url.username,
        "password": url.password,
        "schema": url.database,
    }


def _build_dag(dag_id: str, table: str) -> Any:
    from airflow.sdk import DAG

    with DAG(dag_id, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        append = DeltaAppendOperator(
            task_id="append",
            table=table,
            source={"kind": "rows", "rows": [[1, "a"], [2, "b"]], "schema": SCHEMA},
            partition_by=["p"],
            execution_mode="in_process",
            # The outside MERGE lease is there for the gate trigger to find: the append must not take its
            # turn behind it (it would wait for the lease to expire, and the trigger would see nothing).
            turn_wait_timeout=0,
        )
        optimize = DeltaOptimizeOperator(
            task_id="optimize",
            table=table,
            execution_mode="in_process",
            deferrable=True,
            poll_interval=1.0,
            lease_store_conn_id=CONN_ID,
        )
        append >> optimize
    return dag


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_writer_and_gated_optimize_lease_in_the_connections_store(
    kind: str,
    airflow_db: Path,
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    if kind == "postgres":
        store_url = request.getfixturevalue("postgres_url")
        connection = _postgres_connection(store_url)
    else:
        lease_file = tmp_path / "conn-leases.db"
        store_url = f"sqlite:///{lease_file}"
        connection = {"conn_type": "sqlite", "host": str(lease_file)}
        # dag.test() runs every task in this process: a SQLite store is safe whatever the executor says.
        monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(connection))
    monkeypatch.setenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", CONN_ID)  # the writer's store
    # The older settings lose to the connection: nothing may land in either file.
    older = tmp_path / "older-url.db"
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{older}")
    monkeypatch.setenv("DELTACC_LEASE_DB", str(tmp_path / "embedded.db"))

    table = str(tmp_path / f"orders_{kind}")
    dag_id = f"deltacc_test_lease_store_{kind}"
    # A writer's MERGE lease, held outside Airflow, keeps OPTIMIZE waiting: it defers, and the trigger (run
    # inline by dag.test) must find the lease through the connection; the trigger's first look releases it.
    holder = store_from_url(store_url)
    merge = holder.try_acquire(
        LeaseRequest(table, "outside.merge/manual", OpKind.MERGE), lambda _: False
    ).lease
    assert merge is not None
    opened: list[LeaseStore] = []
    seen: list[list[str]] = []  # the live leases the trigger's store held when it opened it
    real_open = DeltaGateTrigger._open

    def open_and_release(trigger: DeltaGateTrigger) -> LeaseStore:
        store = real_open(trigger)
        opened.append(store)
        seen.append([lease.lease_id for lease in store.active(table)])
        holder.release(merge.lease_id)  # a no-op after the first time
        return store

    monkeypatch.setattr(DeltaGateTrigger, "_open", open_and_release)
    dag = _build_dag(dag_id, table)
    serialize_dag(dag, tmp_path / "no-dags")
    try:
        dr = dag.test()
        history = holder.history(table)
    finally:
        holder.close()

    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert states == {"append": "success", "optimize": "success"}, states
    assert seen[0] == [merge.lease_id]  # the trigger saw the outside lease through the connection
    assert isinstance(opened[0], PostgresLeaseStore if kind == "postgres" else SqliteLeaseStore)
    leases = {(lease.holder.split("/")[0], lease.op_kind) for lease in history}
    assert leases == {
        ("outside.merge", OpKind.MERGE),
        (f"{dag_id}.append", OpKind.BLIND_APPEND),
        (f"{dag_id}.optimize", OpKind.OPTIMIZE),
    }, leases
    assert all(lease.released_at is not None for lease in history)
    assert not older.exists() and not (tmp_path / "embedded.db").exists()


def test_airflow_config_list_shows_the_deltacc_section(airflow_db: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__DELTACC__")}
    env["AIRFLOW__DELTACC__LEASE_STORE_CONN_ID"] = "shared_leases"
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run(
        [str(airflow), "config", "list", "--section", "deltacc", "--color", "off", "--show-values", "-d"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert "[deltacc]" in lines, result.stdout
    assert "lease_store_conn_id = shared_leases" in lines, result.stdout
    assert "allow_unshared_lease_store = False" in lines, result.stdout
    assert "# default_deferrable =" in lines, result.stdout  # unset: [operators] default_deferrable
    assert "The Airflow connection of the lease store" in result.stdout


_CELERY_DAG = """
from datetime import datetime
from airflow.sdk import DAG
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaOptimizeOperator

with DAG("{dag_id}", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    DeltaAppendOperator(
        task_id="append",
        table="{table}",
        source={{"kind": "rows", "rows": [[1, "a"]], "schema": "{schema}"}},
        execution_mode="in_process",
        retries=0,
    )
    DeltaOptimizeOperator(task_id="optimize", table="{table}", execution_mode="in_process", retries=0)
"""


def test_under_celery_writers_and_maintenance_without_a_shared_store_fail_at_their_start(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The tasks run as a Celery worker runs them: Airflow's task supervisor starts a task process that
    talks to it through a socket (here with the execution API in this process, as ``dag.test()`` serves
    it), so this is not ``dag.test()``'s in-process task run, and ``[core] executor`` decides."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.executors.workloads import BundleInfo, ExecuteTask
    from airflow.sdk.definitions import dag as dag_module
    from airflow.sdk.execution_time.supervisor import InProcessTestSupervisor, supervise_task
    from sqlalchemy.orm import object_session

    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    for name in ("DELTACC_LEASE_STORE_URL", "AIRFLOW__DELTACC__LEASE_STORE_CONN_ID"):
        monkeypatch.delenv(name, raising=False)
    embedded = tmp_path / "embedded.db"
    monkeypatch.setenv("DELTACC_LEASE_DB", str(embedded))
    table = tmp_path / "orders"
    dag_id = "deltacc_test_lease_store_celery"
    dag_file = tmp_path / "dags" / "celery_leases.py"
    dag_file.parent.mkdir()
    dag_file.write_text(_CELERY_DAG.format(dag_id=dag_id, table=table, schema=SCHEMA))
    bag = DagBag(dag_folder=str(dag_file))
    assert not bag.import_errors, bag.import_errors
    dag = bag.dags[dag_id]
    serialize_dag(dag, tmp_path / "no-dags")
    exit_codes: dict[str, int] = {}

    def run_like_a_worker(*, ti: Any, task: Any, run_triggerer: bool = False) -> None:
        ti.state = "queued"  # what the scheduler does before a worker picks the task up
        session = object_session(ti)
        assert session is not None
        session.commit()
        workload = ExecuteTask.make(ti, dag_rel_path=dag_file, bundle_info=BundleInfo(name="dags-folder"))
        exit_codes[ti.task_id] = supervise_task(
            ti=workload.ti,  # type: ignore[arg-type]  # a TaskInstanceDTO, as Airflow's executors pass it
            bundle_info=workload.bundle_info,
            dag_rel_path=workload.dag_rel_path,
            token=workload.token,
            client=InProcessTestSupervisor._api_client(dag),
            subprocess_logs_to_stdout=True,
        )

    monkeypatch.setattr(dag_module, "_run_task", run_like_a_worker)
    dr = dag.test()
    output = capfd.readouterr().out

    states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}
    assert states == {"append": "failed", "optimize": "failed"}, states
    assert set(exit_codes) == {"append", "optimize"}
    for task_id in ("append", "optimize"):
        assert (
            f"{task_id}: no shared lease store is configured, so this task would use the embedded SQLite "
            "lease file, but [core] executor = CeleryExecutor" in output
        ), output[-5000:]
    assert output.count("Set [deltacc] lease_store_conn_id (AIRFLOW__DELTACC__LEASE_STORE_CONN_ID)") >= 2
    # Failed at the start: no table written, no lease file made.
    assert not table.exists() and not embedded.exists()
