"""Chaos through Airflow: bank transfers as mapped MERGE tasks in a real Airflow stack, under faults.

The DAGs (``airflow_dags/``) run the transfers of :func:`tests.chaos.workload.plan` as a mapped
:class:`~tests.chaos.airflow_faults.ChaosMergeOperator` over Spark Connect, with write leases in a PostgreSQL
lease store of their own, and a gated OPTIMIZE (deferred) on the same table. They run on a stack that was
started with :func:`chaos_env` in its environment (the topology module's Celery deployment in the tests,
a LocalExecutor stack of its own in ``bench/chaos.py --airflow``). While the transfers run, the driver here:

- SIGKILLs task processes mid-MERGE (the server holds the MERGE's first attempt; the gate is opened after
  the kill, so the orphaned MERGE may still commit) and after their commit, before the report. Airflow sees
  the task die and retries it: the retry must commit once or skip as a duplicate;
- fires the maintenance DAG once the first task was killed;
- while the last task with a planned fault is held at its fault point (so the run is certainly still going),
  stops the lease store's PostgreSQL for a few seconds, then starts it again on the same port, and SIGKILLs
  the scheduler (its process group: a LocalExecutor's workers and task supervisors go with it, while
  Celery's tasks run on in their workers) and starts a new one.

A task keeps its planned fault until one of its tries reaches the fault point, so every planned fault is
injected whatever the machine's timing; one that is not is a violation that says what became of its task.

Afterwards delta-rs checks: every task ended in success; every transfer's txn identity is in exactly one
commit (0 lost, 0 duplicated); the balances are those of every transfer applied once; every version of the
table adds up to the total; the log holds only the expected operations.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import shutil
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.airflow_faults import (
    CONNECT_CONN_ID,
    LEASES_CONN_ID,
    PLAN_ENV,
    FaultPoint,
    claimant,
    fault_dir,
    process_alive,
)
from tests.chaos.workload import ChaosConfig, Transfer, adds_up_to, every_version, initial_accounts, plan
from tests.support.airflow_stack import AirflowStack, RunDidNotSucceed
from tests.support.delta_log import log_commits
from tests.support.postgres import PostgresServer, airflow_connection

ROOT = Path(__file__).resolve().parents[2]
DAG_FILES = Path(__file__).resolve().parent / "airflow_dags"
TRANSFERS_DAG = "chaos_transfers"
MAINTENANCE_DAG = "chaos_maintenance"
REPORT_XCOM_KEY = "deltacc_report"
ALLOWED_OPS = frozenset({"WRITE", "MERGE", "OPTIMIZE"})
#: Scheduler settings that let a new scheduler find the tasks of a killed one within seconds, not minutes.
FAST_RECOVERY_ENV = {
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "30",
    "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_THRESHOLD": "15",
    "AIRFLOW__SCHEDULER__ORPHANED_TASKS_CHECK_INTERVAL": "10",
}


@dataclass(frozen=True)
class AirflowChaosConfig:
    """The size of a run through Airflow.

    :param transfers: mapped transfer tasks.
    :param mid_merge_kills: task processes SIGKILLed while the server holds their MERGE.
    :param after_commit_kills: task processes SIGKILLed after their commit, before the report.
    :param scheduler_restarts: times the scheduler is SIGKILLed and started again.
    :param lease_store_stops: times the lease store's PostgreSQL is stopped for ``lease_store_down_s``.
    :param seed: decides the transfers and which of them die.
    :param branches: partitions of the accounts table.
    :param accounts_per_branch: accounts opened before the run.
    :param parallelism: the task slots of a stack of its own (``bench/chaos.py --airflow``).
    :param retries: Airflow retries of every task.
    :param lease_ttl_s: the tasks' lease TTL (a killed task's lease lasts this long).
    :param lease_store_down_s: how long the lease store stays down.
    :param timeout_s: how long the runs may take.
    """

    transfers: int = 12
    mid_merge_kills: int = 2
    after_commit_kills: int = 2
    scheduler_restarts: int = 1
    lease_store_stops: int = 1
    seed: int = 11
    branches: int = 6
    accounts_per_branch: int = 2
    parallelism: int = 6
    retries: int = 3
    lease_ttl_s: float = 20.0
    lease_store_down_s: float = 5.0
    timeout_s: float = 900.0

    def workload(self) -> ChaosConfig:
        """The thread workload's config with this run's accounts and transfers, for :func:`plan`."""
        return ChaosConfig(
            transfers=self.transfers,
            faults=0,
            seed=self.seed,
            branches=self.branches,
            accounts_per_branch=self.accounts_per_branch,
            opens=0,
            optimizes=0,
            process_kills=0,
            lease_kills=0,
        )

    def faults(self) -> dict[int, FaultPoint]:
        """Which mapped transfer dies where, on its first try that runs."""
        points = [FaultPoint.MID_MERGE] * self.mid_merge_kills
        points += [FaultPoint.AFTER_COMMIT] * self.after_commit_kills
        if len(points) > self.transfers:
            raise ValueError(f"{len(points)} task kills need as many transfers; transfers={self.transfers}")
        if not points and (self.scheduler_restarts or self.lease_store_stops):
            raise ValueError(
                "the scheduler restarts and lease store stops are brought on while a task is held "
                "at its fault point: plan at least one task kill"
            )
        chosen = random.Random(self.seed).sample(range(self.transfers), len(points))
        return dict(zip(chosen, points, strict=True))


@dataclass
class AirflowChaosResult:
    """What a run did and what its checks found."""

    config: AirflowChaosConfig
    committed: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    tries: Counter[int] = field(default_factory=Counter)
    skipped_duplicates: int = 0
    task_states: Counter[str] = field(default_factory=Counter)
    events: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    check_s: float = 0.0
    violations: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The figures, one per line."""
        c = self.config
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        tries = ", ".join(f"{n} tries: {k}" for n, k in sorted(self.tries.items()))
        states = ", ".join(f"{k} {v}" for k, v in sorted(self.task_states.items()))
        return [
            f"chaos through Airflow: {c.transfers} mapped transfers, parallelism {c.parallelism}, "
            f"seed {c.seed}",
            f"faults injected: {sum(self.faults.values())} ({faults})",
            *[f"  {event}" for event in self.events],
            f"task instances: {states}; transfer tasks by tries: {tries}",
            f"committed once: {self.committed}/{c.transfers}; lost: {len(self.lost)}; "
            f"duplicated: {len(self.duplicated)}; "
            f"retries answered as skipped duplicates: {self.skipped_duplicates}",
            f"wall time: {self.wall_s:.1f} s (+ {self.check_s:.1f} s invariant checks)",
            f"invariant violations: {len(self.violations)}",
            *[f"  VIOLATION: {v}" for v in self.violations],
        ]


def transfer_app_id(index: int, run_id: str) -> str:
    """The txn identity Airflow gives mapped transfer ``index`` (the same on every try)."""
    return f"airflow/{TRANSFERS_DAG}/transfer/{index}/{run_id}"


def write_plan(path: Path, cfg: AirflowChaosConfig, table: str, faults_dir: Path) -> list[Transfer]:
    """Write the plan the DAG files and the fault points read; the transfers."""
    transfers = plan(cfg.workload())
    plan_data = {
        "table": table,
        "retries": cfg.retries,
        "lease_ttl_s": cfg.lease_ttl_s,
        "accounts": initial_accounts(cfg.workload()),
        "transfers": [dataclasses.asdict(t) for t in transfers],
        "faults": {str(index): str(point) for index, point in cfg.faults().items()},
        "faults_dir": str(faults_dir),
    }
    path.write_text(json.dumps(plan_data, indent=1))
    return transfers


class _Driver:
    """Brings the faults on while the transfers run, one poll at a time.

    Nothing here waits for an event a fast or a slow machine could skip. A task with a planned fault keeps
    claiming it on each try until one reaches the fault point (:func:`~tests.chaos.airflow_faults._planned`),
    and every fault that is not a task's own is brought on while the last planned task is held at its fault
    point: that task has not finished, so the transfers' run is certainly still going, and no try of a task
    still waiting for its fault can be taken down by the scheduler's restart.
    """

    def __init__(
        self,
        stack: AirflowStack,
        cfg: AirflowChaosConfig,
        faults_dir: Path,
        lease_server: PostgresServer,
        result: AirflowChaosResult,
    ) -> None:
        self.stack, self.cfg, self.lease_server, self.result = stack, cfg, lease_server, result
        self.pending = {index: fault_dir({"faults_dir": str(faults_dir)}, index) for index in cfg.faults()}
        self.points = cfg.faults()
        self.kills = 0
        self.maintenance_run: str | None = None

    def note(self, event: str) -> None:
        self.result.events.append(f"{time.strftime('%H:%M:%S')} {event}")

    def poll(self) -> None:
        for index, directory in sorted(self.pending.items()):
            if claimant(directory) is not None and (directory / "entered").exists():
                if len(self.pending) == 1:
                    self._stop_lease_store()
                    self._restart_scheduler()
                self._kill_task(index, directory)
        if self.kills >= 1 and self.maintenance_run is None:
            self.maintenance_run = self.stack.trigger(MAINTENANCE_DAG)
            self.note(f"maintenance DAG fired: {self.maintenance_run}")

    @property
    def done(self) -> bool:
        return not self.pending and self.maintenance_run is not None

    def unreached(self) -> dict[int, str]:
        """Each planned fault still pending, with what became of its task's tries."""
        return {index: _account(directory) for index, directory in sorted(self.pending.items())}

    def _kill_task(self, index: int, directory: Path) -> None:
        pid = claimant(directory)  # written before "entered"
        assert pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        point = self.points[index]
        if point is FaultPoint.MID_MERGE:
            (directory / "released").touch()  # the orphaned MERGE on the server may now commit
        del self.pending[index]
        self.kills += 1
        self.result.faults[f"task_{point}"] += 1
        reclaims = directory / "reclaims"
        again = f" (claimed again: {reclaims.read_text().strip()})" if reclaims.exists() else ""
        self.note(f"SIGKILL transfer[{index}] (pid {pid}) {point}{again}")

    def _restart_scheduler(self) -> None:
        for _ in range(self.cfg.scheduler_restarts):
            self.stack.kill_component("scheduler", signal.SIGKILL)
            self.note("SIGKILL scheduler (process group)")
            time.sleep(3)
            self.stack.start_component("scheduler")
            self.stack.wait_ready(["scheduler"], timeout_s=300)
            self.result.faults["scheduler_restart"] += 1
            self.note("new scheduler up")

    def _stop_lease_store(self) -> None:
        for _ in range(self.cfg.lease_store_stops):
            self.lease_server.halt()
            self.note(f"lease store PostgreSQL stopped for {self.cfg.lease_store_down_s:.0f} s")
            time.sleep(self.cfg.lease_store_down_s)
            self.lease_server.start()
            self.result.faults["lease_store_stop"] += 1
            self.note("lease store PostgreSQL started again")


def _account(directory: Path) -> str:
    """What kept a planned fault from happening, from what its task's tries left in ``directory``."""
    if not directory.exists():
        return "no try of its task ever ran"
    pid = claimant(directory)
    if process_alive(pid):
        return f"its claimant (pid {pid}) is still running and never reached the fault point"
    return f"its claimant (pid {pid}) ended before the fault point, and no later try claimed it"


def chaos_env(work: Path, *, lease_url: str, connect_uri: str) -> dict[str, str]:
    """What a stack's environment needs, from its start, to run :func:`run_airflow_chaos` with ``work``: the
    plan's path (the DAG files read it when parsed), the chaos DAGs' lease store and Spark Connect server
    as connections of their own, the repository on ``PYTHONPATH`` (the DAG files import
    :mod:`tests.chaos.airflow_faults`), and :data:`FAST_RECOVERY_ENV` (the restarted scheduler finds the
    killed tasks within seconds).

    :param work: the run's directory (the table, the plan, the fault points).
    :param lease_url: the lease store's URL, on a PostgreSQL server that is not Airflow's (the run stops it).
    :param connect_uri: the Spark Connect server's connection URI.
    """
    return {
        PLAN_ENV: str(work / "plan.json"),
        f"AIRFLOW_CONN_{LEASES_CONN_ID.upper()}": airflow_connection(lease_url),
        f"AIRFLOW_CONN_{CONNECT_CONN_ID.upper()}": connect_uri,
        "PYTHONPATH": str(ROOT),
        **FAST_RECOVERY_ENV,
    }


def run_airflow_chaos(
    stack: AirflowStack, cfg: AirflowChaosConfig, *, lease_server: PostgresServer
) -> AirflowChaosResult:
    """Run the transfers on ``stack`` with the faults of ``cfg``; check them.

    :param stack: a running stack started with :func:`chaos_env` in its environment; the run installs its
        DAGs in it.
    :param cfg: the run's size and faults.
    :param lease_server: the server of :func:`chaos_env`'s lease store (stopped and started by the run).
    """
    plan_path = Path(stack.env[PLAN_ENV])
    work = plan_path.parent
    work.mkdir(parents=True, exist_ok=True)
    table = str(work / "accounts")
    faults_dir = work / "faults"
    transfers = write_plan(plan_path, cfg, table, faults_dir)
    result = AirflowChaosResult(config=cfg)
    for name in (TRANSFERS_DAG, MAINTENANCE_DAG):
        shutil.copy(DAG_FILES / f"{name}.py", stack.dags_folder / f"{name}.py")
    for name in (TRANSFERS_DAG, MAINTENANCE_DAG):
        stack.wait_for_dag(name)
        stack.unpause(name)
    started = time.monotonic()
    run_id = stack.trigger(TRANSFERS_DAG)
    driver = _Driver(stack, cfg, faults_dir, lease_server, result)
    deadline = started + cfg.timeout_s
    while not driver.done and time.monotonic() < deadline:
        driver.poll()
        if stack.run_state(TRANSFERS_DAG, run_id) in ("success", "failed"):
            break
        time.sleep(0.5)
    for index, why in driver.unreached().items():
        point = driver.points[index]
        result.violations.append(f"transfer[{index}]'s planned {point} fault never came: {why}")
    if driver.maintenance_run is None:
        result.violations.append("the maintenance DAG was never fired (no task reached its fault point)")
    runs = [(TRANSFERS_DAG, run_id)]
    if driver.maintenance_run is not None:
        runs.append((MAINTENANCE_DAG, driver.maintenance_run))
    for dag_id, run in runs:
        remaining = max(60.0, deadline - time.monotonic())
        try:
            stack.wait_for_run(dag_id, run, timeout_s=remaining)
        except RunDidNotSucceed as exc:
            result.violations.append(str(exc))
    result.wall_s = time.monotonic() - started
    _read_tasks(stack, run_id, runs, cfg, result)
    checked = time.monotonic()
    result.violations.extend(check_airflow_invariants(table, cfg, transfers, run_id, result))
    result.check_s = time.monotonic() - checked
    return result


def _read_tasks(
    stack: AirflowStack,
    run_id: str,
    runs: list[tuple[str, str]],
    cfg: AirflowChaosConfig,
    result: AirflowChaosResult,
) -> None:
    """Task states, the transfers' tries, and which retries were answered as skipped duplicates."""
    for dag_id, run in runs:
        for task in stack.task_states(dag_id, run):
            result.task_states[str(task.state)] += 1
            if task.state != "success":
                result.violations.append(f"{dag_id} {task.label} ended {task.state} (try {task.try_number})")
            if task.task_id != "transfer":
                continue
            result.tries[task.try_number] += 1
            report = stack.xcom(dag_id, run, task.task_id, REPORT_XCOM_KEY, task.map_index) or {}
            if report.get("skipped_duplicate"):
                result.skipped_duplicates += 1
            if task.map_index in cfg.faults() and task.try_number < 2:
                result.violations.append(f"{task.label} was killed but not retried (try {task.try_number})")
    expected = {"open_accounts": 1, "transfer": cfg.transfers}
    found = Counter(t.task_id for t in stack.task_states(TRANSFERS_DAG, run_id))
    if dict(found) != expected:
        result.violations.append(f"transfer DAG task instances {dict(found)}, expected {expected}")


def check_airflow_invariants(
    table: str,
    cfg: AirflowChaosConfig,
    transfers: list[Transfer],
    run_id: str,
    result: AirflowChaosResult,
) -> list[str]:
    """Exactly once, checked with delta-rs and the Delta log: fills ``committed``, ``lost`` and
    ``duplicated`` of ``result``; returns the violations."""
    from deltalake import DeltaTable

    violations: list[str] = []
    commits = log_commits(table)
    by_app = Counter(txn["appId"] for commit in commits for txn in commit["txn"])
    expected_ids = {transfer_app_id(i, run_id): t.id for i, t in enumerate(transfers)}
    result.lost = sorted(tid for app, tid in expected_ids.items() if by_app[app] == 0)
    result.duplicated = sorted(tid for app, tid in expected_ids.items() if by_app[app] > 1)
    result.committed = sum(1 for app in expected_ids if by_app[app] == 1)
    if result.lost:
        violations.append(f"transfers lost (no commit with their identity): {result.lost}")
    if result.duplicated:
        violations.append(f"transfers committed more than once: {result.duplicated}")
    unexpected = sorted(set(by_app) - set(expected_ids) - {"chaos/open_accounts"})
    if unexpected or by_app["chaos/open_accounts"] != 1:
        opened = by_app["chaos/open_accounts"]
        violations.append(f"txn identities: unexpected {unexpected}, chaos/open_accounts in {opened} commits")
    operations = Counter(str(c["commitInfo"].get("operation")) for c in commits)
    if set(operations) - ALLOWED_OPS or operations["MERGE"] != cfg.transfers:
        violations.append(f"operations in the log {dict(operations)}: {cfg.transfers} MERGEs expected")

    balances = {account: balance for _, account, balance in initial_accounts(cfg.workload())}
    for t in transfers:
        balances[t.src] -= t.amount
        balances[t.dst] += t.amount
    rows = DeltaTable(table).to_pyarrow_table(columns=["account", "balance"]).to_pylist()
    found = {r["account"]: r["balance"] for r in rows}
    if found != balances or len(rows) != len(balances):
        differ = sorted(a for a in balances.keys() | found.keys() if found.get(a) != balances.get(a))
        violations.append(f"balances differ from every transfer applied once: {differ} ({len(rows)} rows)")
    total = sum(balance for _, _, balance in initial_accounts(cfg.workload()))
    bad = every_version(table, adds_up_to("balance", total))
    if bad:
        violations.append(f"versions unreadable or off-total: {bad[:10]}")
    return violations
