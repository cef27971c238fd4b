"""The provider on more than one machine: Airflow with the CeleryExecutor and a Spark standalone cluster,
each "host" a loopback address of its own (see :mod:`tests.support.hosts`).

- 127.0.0.1: PostgreSQL (the metadata database and the lease store), Redis (the Celery broker), Airflow's
  api-server, scheduler, dag-processor and triggerer, the Spark master and a Spark Connect server on it;
- 127.0.0.2 and 127.0.0.3: a Celery worker each (its own directory, temporary files and task logs, served
  to the api-server by a log server on its address) and a Spark worker each (the Connect server's executors).

Tasks are thin clients of the Connect server (or spark-submit their own local driver on their host), and every
task takes its leases in the one PostgreSQL lease store.

Nine writers (three mapped appends, six mapped MERGEs pinned to one partition each, two per partition) and
four PySpark-decorated writers write at the same time, and a maintenance DAG (OPTIMIZE, then VACUUM, both
deferring at the gate) fires while they run. One MERGE holds its write on the cluster on its first try; the
test then takes that task's host down at once: SIGKILL of its Celery worker, task processes and drivers,
and of its Spark worker with the Connect server's executor on it, mid-stage: the held MERGE's gated stage
has a task on each host's executor, and the test waits until both are held. Spark runs what it lost again
on the surviving executor, and the test prints what. Checked afterwards with delta-rs, the Delta log, the
tries' hosts, the Connect server's log and the lease store's records:

- the Connect server's driver lost the executor on the lost host and the held MERGE's task on it (its log
  says so), and went on with the other one;
- every task instance ended in success, on both hosts; every task that lost its host was retried on the other;
  a task that never ran there succeeded on its first try, one that did needed one more try at most;
- every write committed exactly once: the table's rows, and each writer's txn identity in one commit only;
- no OPTIMIZE committed while a MERGE lease (the writers OPTIMIZE conflicts with) on a partition it rewrote
  (its commit's ``remove`` actions) was active, nor did its lease overlap one (the gate lets it compact the
  partitions no MERGE holds); VACUUM's lease overlapped no writer's lease.

A task given a SQLite lease store, which lives on one host's disk, is refused before it writes anything.

Before the host is lost, the same deployment runs the chaos through Airflow
(:mod:`tests.chaos.airflow_workload`): mapped bank transfers over the shared Spark Connect server, with a
lease store of their own, while task processes are killed mid-MERGE and after their commit, the scheduler is
killed and started again, and the transfers' lease store is stopped for a while; every transfer must commit
exactly once.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import Lease, LeaseStore, PostgresLeaseStore
from airflow_provider_deltacc.leases.partitions import scopes_overlap
from airflow_provider_deltacc.spark_jars.delta_conf import CORE_SIZED_SETTINGS
from tests.chaos.airflow_workload import FAST_RECOVERY_ENV, AirflowChaosConfig, chaos_env, run_airflow_chaos
from tests.integration.topology import workload
from tests.support.airflow_stack import AirflowStack, CeleryOptions, RunDidNotSucceed, StackOptions
from tests.support.delta_log import log_commits
from tests.support.gate import Gate
from tests.support.postgres import PostgresServer, airflow_connection, scratch_database, throwaway_postgres
from tests.support.redis_server import running_redis
from tests.support.spark_connect import ConnectServer, running_connect_server
from tests.support.spark_standalone import StandaloneCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(9), pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[3]
DAG_FILES = Path(__file__).resolve().parent / "dags"
HOSTS = ("127.0.0.2", "127.0.0.3")
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
def hold_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the held MERGE's gate is (see :class:`workload.HeldMergeOperator`)."""
    return tmp_path_factory.mktemp("held-merge")


@pytest.fixture(scope="module")
def broker_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_redis(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark master on 127.0.0.1 and a 1-core worker on each host."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"), worker_hosts=HOSTS)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def cluster_connect_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Connect server's directory: its warehouse, and its log (``server-1.log``)."""
    return tmp_path_factory.mktemp("cluster-connect")


@pytest.fixture(scope="module")
def cluster_connect_server(
    spark_cluster: StandaloneCluster, cluster_connect_dir: Path
) -> Iterator[ConnectServer]:
    """A Connect server whose executors run on the cluster's workers (one on each host), its partition counts
    sized to the cluster's two cores as a small cluster's would be (Spark's 200 shuffle partitions make every
    MERGE and VACUUM a hundred tiny tasks a core)."""
    conf = {
        "spark.executor.memory": "768m",
        "spark.executor.cores": "1",
        "spark.ui.enabled": "false",
        **dict.fromkeys(CORE_SIZED_SETTINGS, str(len(HOSTS))),
    }
    with running_connect_server(cluster_connect_dir, master=spark_cluster.master_url, conf=conf) as server:
        yield server


@pytest.fixture(scope="module")
def sqlite_leases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sqlite-leases") / "leases.db"


@pytest.fixture(scope="module")
def chaos_lease_server() -> Iterator[tuple[PostgresServer, str]]:
    """The chaos transfers' lease store: a PostgreSQL server of its own, as the run stops it and Airflow's
    (which also holds the writers' lease store) must stay up."""
    with throwaway_postgres() as server_and_url:
        yield server_and_url


@pytest.fixture(scope="module")
def chaos_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chaos-through-airflow")


@pytest.fixture(scope="module")
def airflow_stack_options(
    cluster_connect_server: ConnectServer,
    spark_connect_server: ConnectServer,
    broker_url: str,
    lease_store_url: str,
    table: str,
    hold_dir: Path,
    sqlite_leases: Path,
    chaos_lease_server: tuple[PostgresServer, str],
    chaos_dir: Path,
) -> StackOptions:
    return StackOptions(
        env={
            **chaos_env(
                chaos_dir, lease_url=chaos_lease_server[1], connect_uri=spark_connect_server.conn_uri
            ),
            "AIRFLOW_CONN_SPARK_CONNECT_DEFAULT": cluster_connect_server.conn_uri,
            # The lease store by connection, as a deployment configures it ([deltacc] lease_store_conn_id):
            # the task processes and the triggerer each resolve it.
            "AIRFLOW__DELTACC__LEASE_STORE_CONN_ID": "deltacc_leases",
            "AIRFLOW_CONN_DELTACC_LEASES": airflow_connection(lease_store_url),
            "AIRFLOW_CONN_DELTACC_SQLITE_LEASES": json.dumps(
                {"conn_type": "sqlite", "host": str(sqlite_leases)}
            ),
            workload.TABLE_ENV: table,
            workload.HOLD_ENV: str(hold_dir),
            # The decorated writers in spark_submit mode: a local driver per task, on its worker's host.
            "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[1]"}',
            "PYTHONPATH": str(ROOT),  # the DAG files import tests.integration.topology.workload
            # A lost host's tasks are found within seconds, and its queued ones are queued again.
            **FAST_RECOVERY_ENV,
            "AIRFLOW__SCHEDULER__TASK_QUEUED_TIMEOUT": "90",
        },
        parallelism=16,
        celery=CeleryOptions(broker_url=broker_url, hosts=HOSTS, concurrency=6),
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


def _txn_commits(table: str) -> dict[str, list[tuple[int, int]]]:
    """Each txn identity of the table's log, with the (table version, txn version) of its commits."""
    by_app: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for commit in log_commits(table):
        for txn in commit["txn"]:
            by_app[txn["appId"]].append((commit["version"], int(txn["version"])))
    return dict(by_app)


def _hosts_of_tries(tries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(host, state) of each try of a task instance, oldest first."""
    return [(str(t.get("hostname") or ""), str(t.get("state"))) for t in tries]


def _queued_before(tried: dict[str, Any], moment: datetime) -> bool:
    queued = tried.get("queued_when")
    return queued is not None and datetime.fromisoformat(str(queued)) < moment


def _check_first_tries(
    tries: dict[tuple[str, str], list[dict[str, Any]]], lost: str, survivor: str, lost_at: datetime
) -> None:
    """Retries hide no failure: a task that never ran on the lost host succeeded on its first try. One that
    did, or whose first try was queued before the host was lost and never started (a message that host's
    worker held), succeeded there before the loss or on the survivor with one more try at most."""
    for key, per_task in tries.items():
        hosts = _hosts_of_tries(per_task)
        touched = any(host == lost for host, _ in hosts) or (
            hosts[0][0] == "" and _queued_before(per_task[0], lost_at)
        )
        if touched:
            assert hosts[-1][1] == "success" and len(hosts) <= 2, (key, hosts)
            assert len(hosts) == 1 or hosts[-1][0] == survivor, (key, hosts)
        else:
            assert len(hosts) == 1 and hosts[0][1] == "success", (key, hosts)


def _check_optimize_rewrote_no_merge_partition(
    commits: list[dict[str, Any]], merge_leases: list[tuple[Lease, tuple[datetime, datetime]]]
) -> list[str]:
    """From the data, not from the gate's decision: the partitions each OPTIMIZE commit rewrote (the partition
    values of its ``remove`` actions) lie in no partition a MERGE lease live at its commit held. Returns
    each OPTIMIZE's rewritten partitions, for the test's output."""
    rewrote: list[str] = []
    for commit in commits:
        if commit["commitInfo"].get("operation") != "OPTIMIZE":
            continue
        rewritten = [dict(values) for values in commit["removed"]]
        assert rewritten, f"OPTIMIZE v{commit['version']} committed without removing a file"
        committed = _commit_time(commit["commitInfo"])
        inside = [
            merge.describe()
            for merge, (start, end) in merge_leases
            if start <= committed <= end and scopes_overlap(merge.partitions, rewritten)
        ]
        assert not inside, f"OPTIMIZE v{commit['version']} rewrote {rewritten} inside MERGE leases {inside}"
        parts = sorted({"/".join(f"{k}={v}" for k, v in spec.items()) for spec in rewritten})
        rewrote.append(f"v{commit['version']}: {', '.join(parts)}")
    return rewrote


#: The Spark scheduler's log lines on a task it started, and on a task lost because its executor went away
#: (Spark 4 words it "failed because while it was being computed, its executor exited"; earlier releases
#: log an ``ExecutorLostFailure``).
_STARTED = re.compile(r"Starting task (\d+)\.(\d+) in stage (\d+)\.\d+ \(TID (\d+)\) \(([\d.]+),\s*executor")
_LOST_WITH_EXECUTOR = re.compile(r"\(TID (\d+)\).*(its executor exited|ExecutorLostFailure)")


def _spark_retries(connect_log: Path, lost: str) -> tuple[list[str], list[str], list[str]]:
    """From the Connect server's driver log: its lines on losing the executor on ``lost``; the tasks that ran
    there when it went (``task 0 of stage 19``), each only when Spark then started that task again on
    another host (a later attempt of it, or of its stage resubmitted); and every line on running lost work
    again (tasks lost, stages resubmitted)."""
    lines = connect_log.read_text(errors="replace").splitlines()
    lost_executor = [line for line in lines if "Lost executor" in line and lost in line]
    started = [(n, m.groups()) for n, line in enumerate(lines) if (m := _STARTED.search(line))]
    on_lost = {tid: (task, stage) for _, (task, _, stage, tid, host) in started if host == lost}
    lost_tasks = []
    for n, line in enumerate(lines):
        match = _LOST_WITH_EXECUTOR.search(line)
        if match is None or match.group(1) not in on_lost:
            continue
        task, stage = on_lost[match.group(1)]
        again_elsewhere = (
            later > n and (t, s) == (task, stage) and host != lost for later, (t, _, s, _, host) in started
        )
        if any(again_elsewhere):
            lost_tasks.append(f"task {task} of stage {stage}")
    again = [line for line in lines if ("Lost task" in line and lost in line) or "resubmit" in line.lower()]
    return lost_executor, lost_tasks, again


CHAOS = AirflowChaosConfig()


@pytest.mark.timeout(1500)
def test_transfers_survive_killed_tasks_scheduler_and_lease_store_exactly_once(
    airflow_stack: AirflowStack, chaos_lease_server: tuple[PostgresServer, str]
) -> None:
    """Runs before the test that takes a host down, on the deployment with both hosts."""
    result = run_airflow_chaos(airflow_stack, CHAOS, lease_server=chaos_lease_server[0])
    report = "\n".join(result.lines())
    print(report)

    assert result.violations == [], report
    assert (result.committed, result.lost, result.duplicated) == (CHAOS.transfers, [], []), report
    assert result.faults == Counter(
        {
            "task_mid_merge": CHAOS.mid_merge_kills,
            "task_after_commit": CHAOS.after_commit_kills,
            "scheduler_restart": CHAOS.scheduler_restarts,
            "lease_store_stop": CHAOS.lease_store_stops,
        }
    ), report
    # A task killed after its commit is retried by Airflow, and the retry finds its commit in the log.
    assert result.skipped_duplicates >= CHAOS.after_commit_kills, report
    assert sum(n for tries, n in result.tries.items() if tries >= 2) >= CHAOS.mid_merge_kills + (
        CHAOS.after_commit_kills
    ), report


def test_writers_on_two_hosts_lose_one_and_commit_exactly_once_with_gated_maintenance(
    airflow_stack: AirflowStack,
    spark_cluster: StandaloneCluster,
    cluster_connect_dir: Path,
    table: str,
    lease_store_url: str,
    hold_dir: Path,
) -> None:
    from deltalake import DeltaTable

    stack = airflow_stack
    _install_dags(stack, workload.WRITERS_DAG, workload.PYSPARK_DAG, workload.MAINTENANCE_DAG)
    gate = Gate.existing(hold_dir, timeout_s=600)
    with PostgresLeaseStore(lease_store_url) as store:
        writers_run = stack.trigger(workload.WRITERS_DAG)
        pyspark_run = stack.trigger(workload.PYSPARK_DAG)
        # The held MERGE is mid-write: its job waits at the gate on the cluster, with a task on the executor
        # of each host (so whichever host is lost, its executor is mid-stage), and its lease is live.
        gate.wait_entered_on(HOSTS)
        live_merge, fired_at = _live_lease(store, table, OpKind.MERGE, timeout_s=60)
        maintenance_run = stack.trigger(workload.MAINTENANCE_DAG)
        held = next(
            t
            for t in stack.task_states(workload.WRITERS_DAG, writers_run)
            if (t.task_id, t.map_index) == ("merge", workload.HELD_MERGE)
        )
        lost = held.hostname
        assert held.state == "running" and lost in HOSTS, held
        killed = stack.kill_host(lost)
        killed_spark = spark_cluster.kill_worker(lost)
        gate.release()  # the orphaned MERGE may still commit on the cluster: its retry must find it
        lost_at = datetime.now(UTC)
        stack.wait_for_run(workload.WRITERS_DAG, writers_run, timeout_s=600)
        stack.wait_for_run(workload.PYSPARK_DAG, pyspark_run, timeout_s=600)
        stack.wait_for_run(workload.MAINTENANCE_DAG, maintenance_run, timeout_s=300)
        leases = store.history(table)
        now = store.now()

    runs = {
        workload.WRITERS_DAG: writers_run,
        workload.PYSPARK_DAG: pyspark_run,
        workload.MAINTENANCE_DAG: maintenance_run,
    }
    states = {dag_id: stack.task_states(dag_id, run) for dag_id, run in runs.items()}
    pyspark_tasks = [(m, i) for m, amounts in workload.PYSPARK_AMOUNTS.items() for i in range(len(amounts))]
    assert sorted(t.label for t in states[workload.WRITERS_DAG]) == sorted(
        ["create"] + [f"{task}[{i}]" for task, i in WRITER_TASKS]
    )
    assert sorted(t.label for t in states[workload.PYSPARK_DAG]) == sorted(
        ["open"] + [f"add_{m}[{i}]" for m, i in pyspark_tasks]
    )
    assert [t.label for t in states[workload.MAINTENANCE_DAG]] == ["optimize", "vacuum"]
    everything = [t for tasks in states.values() for t in tasks]
    assert {t.label: t.state for t in everything} == {t.label: "success" for t in everything}

    # The tasks ran on both hosts; every one that lost its host was retried on the other and succeeded there.
    raw_tries = {
        (dag_id, t.label): stack.tries(dag_id, runs[dag_id], t.task_id, t.map_index)
        for dag_id in runs
        for t in states[dag_id]
    }
    tries = {key: _hosts_of_tries(per_task) for key, per_task in raw_tries.items()}
    hosts_used = {host for per_task in tries.values() for host, _ in per_task}
    assert hosts_used == set(HOSTS), tries
    survivor = next(h for h in HOSTS if h != lost)
    held_tries = tries[(workload.WRITERS_DAG, held.label)]
    assert held_tries[0][0] == lost and held_tries[-1] == (survivor, "success"), held_tries
    for key, per_task in tries.items():
        if any(host == lost and state != "success" for host, state in per_task):
            assert per_task[-1] == (survivor, "success"), (key, per_task)
    _check_first_tries(raw_tries, lost, survivor, lost_at)
    # The host's Spark worker went with it, and the executor it ran for the Connect server: the driver lost
    # that executor (so whatever ran there was lost too) and finished every job on the other one.
    assert killed_spark[0] == "Worker" and "CoarseGrainedExecutorBackend" in killed_spark, killed_spark
    lost_executor, lost_tasks, spark_again = _spark_retries(cluster_connect_dir / "server-1.log", lost)
    assert lost_executor, f"the Connect server's log does not say it lost the executor on {lost}"
    # It was mid-stage (the held MERGE's task at least): what ran there was lost with it, and Spark ran it
    # again on the surviving executor.
    assert lost_tasks, f"no task ran on {lost}'s executor when it was lost, or none ran again: {spark_again}"
    print(
        f"\nkilled {len(killed)} processes of {lost} at {lost_at:%H:%M:%S} and its Spark worker "
        f"({', '.join(killed_spark)}); the Connect server: {lost_executor[0]}; tasks lost with it and run "
        f"again: {lost_tasks}; Spark's lines on running lost work again "
        f"{len(spark_again)} time(s): {spark_again[:3]}; tries: "
        + "; ".join(f"{dag}/{label}: {per_task}" for (dag, label), per_task in sorted(tries.items()))
    )

    # Every write committed exactly once: the rows, and each txn identity in one commit of the log.
    rows = sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == workload.expected_rows()
    by_app = _txn_commits(table)
    expected_apps = {"topology/create"} | {
        f"airflow/{workload.WRITERS_DAG}/{task}/{i}/{writers_run}" for task, i in WRITER_TASKS
    }
    assert {app: len(entries) for app, entries in by_app.items()} == dict.fromkeys(expected_apps, 1)
    assert {entries[0][1] for entries in by_app.values()} == {1}
    commits = log_commits(table)
    operations = [str(c["commitInfo"].get("operation")) for c in commits]
    assert operations.count("WRITE") == 1 + workload.APPENDS
    assert operations.count("MERGE") == workload.MERGES

    # The decorated writers' read-modify-write: each amount added once, none lost.
    balances = workload.balances_path_for(table)
    total = sum(sum(amounts) for amounts in workload.PYSPARK_AMOUNTS.values())
    assert DeltaTable(balances).to_pyarrow_table().to_pylist() == [{"account": "a", "balance": total}]
    assert {app: len(entries) for app, entries in _txn_commits(balances).items()} == {
        "topology/open": 1,
        **{f"airflow/{workload.PYSPARK_DAG}/add_{m}/{i}/{pyspark_run}": 1 for m, i in pyspark_tasks},
    }

    # No OPTIMIZE committed, nor held its lease, while a conflicting lease (a MERGE's, on a partition the
    # OPTIMIZE rewrites) was active; the lost host's leases count until they expired. VACUUM's lease
    # overlapped no writer's lease at all.
    def leases_of(kinds: set[OpKind]) -> list[tuple[Lease, tuple[datetime, datetime]]]:
        return [(lease, _interval(lease, now)) for lease in leases if lease.op_kind in kinds]

    merge_leases, writer_leases = leases_of({OpKind.MERGE}), leases_of(WRITERS)
    optimize_leases, vacuum_leases = leases_of({OpKind.OPTIMIZE}), leases_of({OpKind.VACUUM})
    assert len(merge_leases) >= workload.MERGES
    # The premise: maintenance fired while a writer it conflicts with was at work.
    assert any(start <= fired_at <= end for _, (start, end) in merge_leases), (fired_at, merge_leases)
    assert len(writer_leases) >= 1 + workload.APPENDS + workload.MERGES
    optimized = [
        (c["version"], _commit_time(c["commitInfo"]))
        for c in commits
        if c["commitInfo"].get("operation") == "OPTIMIZE"
    ]
    assert optimized, f"OPTIMIZE committed nothing: operations {operations}"
    assert optimize_leases and vacuum_leases, [lease.describe() for lease in leases]
    for version, committed in optimized:
        mine = [lease for lease, (start, end) in optimize_leases if start <= committed <= end]
        assert mine, (version, committed, optimize_leases)
        during = [
            merge.describe()
            for merge, (start, end) in merge_leases
            if start <= committed <= end and any(scopes_overlap(merge.partitions, o.partitions) for o in mine)
        ]
        assert not during, f"OPTIMIZE v{version} committed at {committed} inside MERGE leases {during}"
    for optimize, interval in optimize_leases:
        clashes = [
            merge.describe()
            for merge, other in merge_leases
            if _overlap(interval, other) and scopes_overlap(merge.partitions, optimize.partitions)
        ]
        assert not clashes, (optimize.describe(), clashes)
    for vacuum, interval in vacuum_leases:
        clashes = [writer.describe() for writer, other in writer_leases if _overlap(interval, other)]
        assert not clashes, (vacuum.describe(), clashes)
    rewrote = _check_optimize_rewrote_no_merge_partition(commits, merge_leases)
    # Every MERGE committed inside a MERGE lease, but those orphaned on the cluster may not: the held MERGE's
    # job, and any other MERGE whose try ran on the lost host when it went (more of them on a slower box),
    # which the Connect server finished after the task that started it was gone (Spark ran the held one's
    # lost task again). A lease does not stop its holder (docs/deployment.md, lease_ttl): such a commit may
    # land after the lease it no longer heartbeats expired, and Delta's own conflict check guards it then.
    orphaned = {
        f"airflow/{workload.WRITERS_DAG}/merge/{i}/{writers_run}"
        for task, i in WRITER_TASKS
        if task == "merge"
        and any(
            host == lost and state != "success"
            for host, state in tries[(workload.WRITERS_DAG, f"merge[{i}]")]
        )
    }
    assert f"airflow/{workload.WRITERS_DAG}/merge/{workload.HELD_MERGE}/{writers_run}" in orphaned, orphaned
    outside = [
        (c["version"], _commit_time(c["commitInfo"]), [t["appId"] for t in c["txn"]])
        for c in commits
        if c["commitInfo"].get("operation") == "MERGE"
        and not any(start <= _commit_time(c["commitInfo"]) <= end for _, (start, end) in merge_leases)
    ]
    assert all(
        len(apps) == 1 and apps[0] in orphaned and committed > lost_at for _, committed, apps in outside
    ), (outside, orphaned, merge_leases)
    print(
        f"MERGE lease live at firing from {live_merge.acquired_at:%H:%M:%S.%f}, maintenance fired at "
        f"{fired_at:%H:%M:%S.%f}; OPTIMIZE leases: "
        + ", ".join(f"{o.describe()} {start:%H:%M:%S}-{end:%H:%M:%S}" for o, (start, end) in optimize_leases)
        + f"; OPTIMIZE commits rewrote {'; '.join(rewrote)}; MERGE commits outside every MERGE lease: "
        + (
            ", ".join(
                f"v{version} at {committed:%H:%M:%S.%f} ({apps[0]})" for version, committed, apps in outside
            )
            or "none"
        )
    )


def test_a_sqlite_lease_store_is_refused_under_celery_before_anything_is_written(
    airflow_stack: AirflowStack, table: str, sqlite_leases: Path
) -> None:
    """A SQLite lease file lives on one host's disk: a writer given one under the CeleryExecutor fails at
    its start with the documented error, in its log as the api-server reads it from the worker's host."""
    unshared = f"{table}_unshared"
    (airflow_stack.dags_folder / "topology_unshared.py").write_text(
        "from datetime import datetime\n"
        "from airflow.sdk import dag\n"
        "from airflow_provider_deltacc.operators import DeltaAppendOperator\n\n\n"
        "@dag(dag_id='topology_unshared', schedule=None, start_date=datetime(2026, 1, 1), catchup=False)\n"
        "def topology_unshared():\n"
        "    DeltaAppendOperator(\n"
        f"        task_id='append', table={unshared!r}, execution_mode='spark_connect', retries=0,\n"
        "        source={'kind': 'rows', 'rows': [[1]], 'schema': 'id BIGINT'},\n"
        "        lease_store_conn_id='deltacc_sqlite_leases',\n"
        "    )\n\n\n"
        "topology_unshared()\n"
    )
    airflow_stack.wait_for_dag("topology_unshared")
    airflow_stack.unpause("topology_unshared")
    run_id = airflow_stack.trigger("topology_unshared")
    airflow_stack.wait_for_run("topology_unshared", run_id, timeout_s=300, expect="failed")

    (task,) = airflow_stack.task_states("topology_unshared", run_id)
    assert (task.state, task.try_number, task.hostname in HOSTS) == ("failed", 1, True), task
    log = airflow_stack.task_log("topology_unshared", run_id, "append", 1)
    assert "lease_store_conn_id='deltacc_sqlite_leases'" in log, log[-3000:]
    assert "is a SQLite file" in log and "CeleryExecutor" in log, log[-3000:]
    assert "AIRFLOW__DELTACC__LEASE_STORE_CONN_ID" in log, log[-3000:]
    assert not Path(unshared).exists(), "the refused task wrote the table"
    assert not sqlite_leases.exists(), "the refused task created the SQLite lease file"


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
