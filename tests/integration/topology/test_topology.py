"""The provider in a real multi-process Airflow: the scheduler (LocalExecutor) on PostgreSQL, the
dag-processor, the triggerer and the api-server; tasks as thin clients of the test run's Spark Connect server;
leases in a PostgreSQL lease store.

Six writers (three mapped appends, three mapped MERGEs pinned to one partition each) write one table at the
same time, and a maintenance DAG (OPTIMIZE, then VACUUM, both deferring at the gate) fires while they run.
Checked afterwards with delta-rs, the Delta log and the lease store's records:

- every task instance ended in success;
- every write committed exactly once: the table's rows, and each writer's txn identity in one commit only;
- no OPTIMIZE committed while a MERGE lease (the writers OPTIMIZE conflicts with) was active, nor did its
  lease overlap one; VACUUM's lease overlapped no writer's lease.
"""

from __future__ import annotations

import shutil
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.conflict_matrix import OpKind
from airflow_provider_deltacc.windows import Lease, LeaseStore, PostgresLeaseStore
from tests.integration.topology import workload
from tests.support.airflow_stack import AirflowStack, RunDidNotSucceed, StackOptions
from tests.support.delta_log import log_commits
from tests.support.postgres import airflow_connection, scratch_database
from tests.support.spark_connect import ConnectServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[3]
DAG_FILES = Path(__file__).resolve().parent / "dags"
WRITER_TASKS = [("append", i) for i in range(workload.APPENDS)] + [
    ("merge", i) for i in range(workload.MERGES)
]
WRITERS = {OpKind.BLIND_APPEND, OpKind.MERGE}


@pytest.fixture(scope="module")
def lease_store_url(postgres_url: str) -> Iterator[str]:
    with scratch_database(postgres_url, "leases") as url:
        yield url


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("topology") / "orders")


@pytest.fixture(scope="module")
def airflow_stack_options(
    spark_connect_server: ConnectServer, lease_store_url: str, table: str
) -> StackOptions:
    return StackOptions(
        env={
            "AIRFLOW_CONN_SPARK_CONNECT_DEFAULT": spark_connect_server.conn_uri,
            # The lease store by connection, as a deployment configures it ([deltacc] lease_store_conn_id):
            # the task processes and the triggerer each resolve it.
            "AIRFLOW__DELTACC__LEASE_STORE_CONN_ID": "deltacc_leases",
            "AIRFLOW_CONN_DELTACC_LEASES": airflow_connection(lease_store_url),
            workload.TABLE_ENV: table,
            # The decorated writers in spark_submit mode: a local driver per task.
            "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[1]"}',
            "PYTHONPATH": str(ROOT),  # the DAG files import tests.integration.topology.workload
        },
        parallelism=8,
    )


def _install_dags(stack: AirflowStack, *names: str) -> None:
    for name in names:
        shutil.copy(DAG_FILES / f"{name}.py", stack.dags_folder / f"{name}.py")
    for name in names:
        stack.wait_for_dag(name)
        stack.unpause(name)


def _live_lease(store: LeaseStore, table: str, kind: OpKind, timeout_s: float) -> tuple[Lease, datetime]:
    """A lease of ``kind`` on ``table`` and a store time at which it is known to be held.

    The lease is read as active at that very time (granted before it, neither released nor expired at
    it), so the time falls inside the lease's interval however short the lease turns out to be.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        at = store.now()
        live = [
            lease
            for lease in store.active(table, now=at)
            if lease.op_kind is kind and lease.acquired_at <= at
        ]
        if live:
            return live[0], at
        time.sleep(0.1)
    raise TimeoutError(f"no {kind.name} lease seen active on {table} within {timeout_s:.0f} s")


def _commit_time(commit_info: dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(int(commit_info["timestamp"]) / 1000, UTC)


def _interval(lease: Lease, now: datetime) -> tuple[datetime, datetime]:
    end = lease.end_time(now)
    assert end is not None, f"{lease.describe()} is still active after both runs finished"
    return lease.acquired_at, end


def _overlap(a: tuple[datetime, datetime], b: tuple[datetime, datetime]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_six_writers_and_gated_maintenance_in_a_real_airflow(
    airflow_stack: AirflowStack, table: str, lease_store_url: str
) -> None:
    from deltalake import DeltaTable

    stack = airflow_stack
    _install_dags(stack, workload.WRITERS_DAG, workload.MAINTENANCE_DAG)
    with PostgresLeaseStore(lease_store_url) as store:
        writers_run = stack.trigger(workload.WRITERS_DAG)
        # Maintenance fires while the writers are at work: a MERGE holds its lease at fired_at.
        live_merge, fired_at = _live_lease(store, table, OpKind.MERGE, timeout_s=300)
        maintenance_run = stack.trigger(workload.MAINTENANCE_DAG)
        stack.wait_for_run(workload.WRITERS_DAG, writers_run, timeout_s=600)
        stack.wait_for_run(workload.MAINTENANCE_DAG, maintenance_run, timeout_s=300)
        leases = store.history(table)
        now = store.now()

    writers = stack.task_states(workload.WRITERS_DAG, writers_run)
    maintenance = stack.task_states(workload.MAINTENANCE_DAG, maintenance_run)
    expected_writers = ["create"] + [f"{task}[{i}]" for task, i in WRITER_TASKS]
    assert sorted(t.label for t in writers) == sorted(expected_writers)
    assert [t.label for t in maintenance] == ["optimize", "vacuum"]
    assert {t.label: t.state for t in writers + maintenance} == {
        t.label: "success" for t in writers + maintenance
    }

    # Every write committed exactly once: the rows, and each txn identity in one commit of the log.
    rows = sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == workload.expected_rows()
    commits = log_commits(table)
    by_app: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for commit in commits:
        for txn in commit["txn"]:
            by_app[txn["appId"]].append((commit["version"], int(txn["version"])))
    expected_apps = {"topology/create"} | {
        f"airflow/{workload.WRITERS_DAG}/{task}/{i}/{writers_run}" for task, i in WRITER_TASKS
    }
    assert set(by_app) == expected_apps
    assert {app: len(entries) for app, entries in by_app.items()} == dict.fromkeys(expected_apps, 1)
    assert {entries[0][1] for entries in by_app.values()} == {1}
    operations = [str(c["commitInfo"].get("operation")) for c in commits]
    assert operations.count("WRITE") == 1 + workload.APPENDS
    assert operations.count("MERGE") == workload.MERGES

    # No OPTIMIZE committed, nor held its lease, while a conflicting (MERGE) lease was active.
    merge_leases = [_interval(lease, now) for lease in leases if lease.op_kind is OpKind.MERGE]
    writer_leases = [_interval(lease, now) for lease in leases if lease.op_kind in WRITERS]
    optimize_leases = [_interval(lease, now) for lease in leases if lease.op_kind is OpKind.OPTIMIZE]
    vacuum_leases = [_interval(lease, now) for lease in leases if lease.op_kind is OpKind.VACUUM]
    assert len(merge_leases) >= workload.MERGES
    # The premise: maintenance fired while a writer it conflicts with was at work.
    assert any(start <= fired_at <= end for start, end in merge_leases), (fired_at, merge_leases)
    assert len(writer_leases) >= 1 + workload.APPENDS + workload.MERGES
    optimized = [
        _commit_time(c["commitInfo"]) for c in commits if c["commitInfo"].get("operation") == "OPTIMIZE"
    ]
    assert optimized, f"OPTIMIZE committed nothing: operations {operations}"
    assert optimize_leases and vacuum_leases, [lease.describe() for lease in leases]
    for committed in optimized:
        assert any(start <= committed <= end for start, end in optimize_leases), (committed, optimize_leases)
        during = [(s, e) for s, e in merge_leases if s <= committed <= e]
        assert not during, f"OPTIMIZE committed at {committed} inside MERGE leases {during}"
    for held in optimize_leases:
        assert not [m for m in merge_leases if _overlap(held, m)], (held, merge_leases)
    for held in vacuum_leases:
        assert not [w for w in writer_leases if _overlap(held, w)], (held, writer_leases)
    merged = [_commit_time(c["commitInfo"]) for c in commits if c["commitInfo"].get("operation") == "MERGE"]
    for committed in merged:
        assert any(start <= committed <= end for start, end in merge_leases), (committed, merge_leases)

    optimize_start = min(start for start, _ in optimize_leases)
    print(
        f"\nMERGE lease live at firing from {live_merge.acquired_at:%H:%M:%S.%f}, maintenance fired at "
        f"{fired_at:%H:%M:%S.%f}, OPTIMIZE lease at {optimize_start:%H:%M:%S.%f}, last MERGE lease ended "
        f"{max(end for _, end in merge_leases):%H:%M:%S.%f}; tries: "
        + ", ".join(f"{t.label}={t.try_number}" for t in writers + maintenance)
    )


def test_pyspark_decorated_writers_read_modify_write_exactly_over_connect_and_spark_submit(
    airflow_stack: AirflowStack, table: str, lease_store_url: str
) -> None:
    """Mapped ``@task.delta_merge`` tasks over Spark Connect and spark-submit, all at once: each reads the
    balance eagerly and MERGEs it back plus its amount. They take turns on the table (one lease store for
    both modes), and each attempt calls the function afresh, so no update is lost and none applied twice."""
    from deltalake import DeltaTable

    balances = workload.balances_path_for(table)
    _install_dags(airflow_stack, workload.PYSPARK_DAG)
    run_id = airflow_stack.trigger(workload.PYSPARK_DAG)
    airflow_stack.wait_for_run(workload.PYSPARK_DAG, run_id, timeout_s=600)

    states = airflow_stack.task_states(workload.PYSPARK_DAG, run_id)
    tasks = [(m, i) for m, amounts in workload.PYSPARK_AMOUNTS.items() for i in range(len(amounts))]
    expected = ["open"] + [f"add_{m}[{i}]" for m, i in tasks]
    assert sorted((t.label, t.state) for t in states) == sorted((label, "success") for label in expected)
    rows = DeltaTable(balances).to_pyarrow_table().to_pylist()
    total = sum(sum(amounts) for amounts in workload.PYSPARK_AMOUNTS.values())
    assert rows == [{"account": "a", "balance": total}]
    commits = log_commits(balances)
    by_app = defaultdict(int)
    for commit in commits:
        for txn in commit["txn"]:
            by_app[txn["appId"]] += 1
    assert dict(by_app) == {
        "topology/open": 1,
        **{f"airflow/{workload.PYSPARK_DAG}/add_{m}/{i}/{run_id}": 1 for m, i in tasks},
    }
    with PostgresLeaseStore(lease_store_url) as store:
        merges = [lease for lease in store.history(balances) if lease.op_kind is OpKind.MERGE]
    assert len(merges) >= len(tasks)  # every mode's writers held leases in the one store


def test_a_failed_run_is_reported_with_task_states_and_logs(airflow_stack: AirflowStack) -> None:
    (airflow_stack.dags_folder / "topology_failing.py").write_text(
        "from datetime import datetime\n"
        "from airflow.sdk import dag, task\n\n\n"
        "@dag(dag_id='topology_failing', schedule=None, start_date=datetime(2026, 1, 1), catchup=False)\n"
        "def topology_failing():\n"
        "    @task(retries=0)\n"
        "    def fails():\n"
        "        raise ValueError('deliberately broken task')\n\n"
        "    fails()\n\n\n"
        "topology_failing()\n"
    )
    airflow_stack.wait_for_dag("topology_failing")
    airflow_stack.unpause("topology_failing")
    run_id = airflow_stack.trigger("topology_failing")
    with pytest.raises(RunDidNotSucceed) as failed:
        airflow_stack.wait_for_run("topology_failing", run_id, timeout_s=300)
    report = str(failed.value)
    assert "ended failed" in report
    assert "fails: failed (try 1)" in report
    assert "deliberately broken task" in report  # the task's own log
    assert "== scheduler.log" in report and "== api-server.log" in report
