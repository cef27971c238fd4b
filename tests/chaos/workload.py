"""The chaos workload: bank transfers on Delta, through the real engine and commit loop, with injected faults.

An ``accounts`` table (partitioned by ``branch``) and a ``transfer_log`` table. Each transfer is a MERGE that
adds ``-amount`` to one account and ``+amount`` to another (a balance update, so applying it twice would
show), with the txn identity ``chaos/transfer/<id>`` version 1; then the transfer is appended to the log,
with delta-rs (an independent writer, and no Spark job), under ``chaos/log/<id>`` version 1. Writer threads
(one JVM) run the transfers while other threads append new zero-balance accounts, run OPTIMIZE (ungated, on
purpose, so that it collides with the MERGEs) and add a column once; every Spark job goes through
``run_job``, so conflicts are classified and retried by the commit loop.

Faults (:class:`FaultKind`), decided by the seed:

- ``after_commit``: the writer dies after its commit landed and before it reports. In a writer thread the
  report is thrown away (after the MERGE, or after the log append); in a victim process
  (:mod:`tests.chaos.victim`) the Spark driver SIGKILLs its process group. The supervisor re-runs the
  transfer with the same identities: the MERGE must come back ``skipped_duplicate``.
- ``mid_write``: the writer dies inside the write, before its commit. In a thread the source hook raises
  :class:`WriterKilled` (a BaseException, so no handler of the job sees it); in a victim process the
  source hook holds the MERGE's Spark job and the supervisor SIGKILLs the driver's process group. The
  re-run must commit (write once).
- ``lease_holder``: a process holding a lease (via ``hold_lease``, with heartbeats) is SIGKILLed. A dead
  MERGE writer lease must keep a gated OPTIMIZE waiting until its TTL runs out, then the OPTIMIZE runs; a
  dead OPTIMIZE lease must keep the next writer waiting until its TTL runs out, then the writer runs.

:func:`check_invariants` then reads both tables with ``deltalake`` (delta-rs, no JVM).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import multiprocessing
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.chaos.victim import RERUN_PREFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]

ACCOUNTS_SCHEMA = "branch STRING, account STRING, balance BIGINT"
LEGS_SCHEMA = "branch STRING, account STRING, delta BIGINT"
ADDED_COLUMN = "memo"

#: Operations the accounts and log histories may show; nothing else (no DELETE, RESTORE, VACUUM ...).
ALLOWED_ACCOUNT_OPS = frozenset({"CREATE TABLE", "WRITE", "MERGE", "OPTIMIZE", "ADD COLUMNS"})
ALLOWED_LOG_OPS = frozenset({"CREATE TABLE", "WRITE"})

#: Runtime confs for every job: small local jobs, no source materialization, no statistics, and expressions
#: interpreted rather than compiled (Spark's own test setting; compiling each job's projections costs more
#: than evaluating them over a few rows).
JOB_CONF = {
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.shuffle.partitions": "1",
    "spark.databricks.delta.merge.materializeSource": "none",
    "spark.databricks.delta.stats.collect": "false",
}
RETRY_POLICY = {"max_attempts": 12, "min_wait_s": 0.05, "max_wait_s": 1.0, "total_timeout_s": 300.0}


class FaultKind(StrEnum):
    """The injected faults, as reported."""

    AFTER_COMMIT = "after_commit"
    MID_WRITE = "mid_write"
    LEASE_HOLDER = "lease_holder"


class WriterKilled(BaseException):
    """Raised by a fault to end a writer thread abruptly; no ``except Exception`` of the job catches it."""


@dataclass(frozen=True)
class ChaosConfig:
    """The size of a run.

    :param writers: writer threads running transfers at once (one JVM).
    :param transfers: transfers to apply.
    :param faults: injected faults in total (at least ``process_kills + lease_kills``).
    :param seed: decides the transfers, amounts and which transfers get which fault.
    :param branches: partitions of the accounts table.
    :param accounts_per_branch: accounts opened before the run.
    :param initial_balance: each initial account's balance.
    :param cross_branch: the share of transfers between two branches (the rest stay in one branch).
    :param opens: new zero-balance accounts appended during the run.
    :param optimizes: ungated OPTIMIZE runs during the run (gated ones come with lease faults).
    :param process_kills: faults that kill a real Spark driver process (cycling after-merge, mid-write,
        after-log).
    :param lease_kills: lease holders killed (alternately a writer lease and a maintenance lease).
    :param lease_ttl_s: the TTL of the killed holders' leases.
    :param timeout_s: the run is abandoned (and fails its invariants) after this long.
    """

    writers: int = 8
    transfers: int = 200
    faults: int = 24
    seed: int = 7
    branches: int = 12
    accounts_per_branch: int = 4
    initial_balance: int = 1000
    cross_branch: float = 0.3
    opens: int = 8
    optimizes: int = 2
    process_kills: int = 3
    lease_kills: int = 4
    lease_ttl_s: float = 2.0
    timeout_s: float = 900.0

    def __post_init__(self) -> None:
        if self.faults < self.process_kills + self.lease_kills:
            raise ValueError(f"faults={self.faults} must cover process_kills + lease_kills")
        if self.transfers < self.faults + 1:
            raise ValueError("every fault needs its own transfer; raise transfers or lower faults")


@dataclass(frozen=True)
class Transfer:
    """One planned transfer.

    :param id: the transfer id, e.g. ``t0007``.
    :param src_branch: the debited account's branch.
    :param src: the debited account.
    :param dst_branch: the credited account's branch.
    :param dst: the credited account.
    :param amount: the amount moved.
    :param fault: the fault planned for its first run, e.g. ``after_commit/thread_merge``, or None.
    """

    id: str
    src_branch: str
    src: str
    dst_branch: str
    dst: str
    amount: int
    fault: str | None = None

    @property
    def kind(self) -> FaultKind | None:
        """The fault kind, or None."""
        return FaultKind(self.fault.split("/")[0]) if self.fault else None


def branch_name(index: int) -> str:
    return f"b{index:02d}"


def initial_accounts(cfg: ChaosConfig) -> list[tuple[str, str, int]]:
    """The accounts opened before the run: ``(branch, account, balance)``."""
    return [
        (branch_name(b), f"{branch_name(b)}-a{i}", cfg.initial_balance)
        for b in range(cfg.branches)
        for i in range(cfg.accounts_per_branch)
    ]


def plan(cfg: ChaosConfig) -> list[Transfer]:
    """The transfers of a run, with their faults; a function of the config alone."""
    rng = random.Random(cfg.seed)
    accounts = initial_accounts(cfg)
    by_branch: dict[str, list[str]] = {}
    for branch, account, _ in accounts:
        by_branch.setdefault(branch, []).append(account)
    branches = sorted(by_branch)
    drafts = []
    for n in range(cfg.transfers):
        if rng.random() < cfg.cross_branch:
            src_b, dst_b = rng.sample(branches, 2)
            src, dst = rng.choice(by_branch[src_b]), rng.choice(by_branch[dst_b])
        else:
            src_b = dst_b = rng.choice(branches)
            src, dst = rng.sample(by_branch[src_b], 2)
        drafts.append((f"t{n:04d}", src_b, src, dst_b, dst, rng.randint(1, 50)))
    faults: list[str] = []
    process_points = ("after_merge", "mid_write", "after_log")
    for k in range(cfg.process_kills):
        point = process_points[k % len(process_points)]
        kind = FaultKind.MID_WRITE if point == "mid_write" else FaultKind.AFTER_COMMIT
        faults.append(f"{kind}/process_{point}")
    for k in range(cfg.lease_kills):
        faults.append(f"{FaultKind.LEASE_HOLDER}/{'writer_lease' if k % 2 == 0 else 'maintenance_lease'}")
    threads = cfg.faults - cfg.process_kills - cfg.lease_kills
    for k in range(threads):
        if k % 2 == 0:
            faults.append(f"{FaultKind.AFTER_COMMIT}/thread_{'after_merge' if k % 4 == 0 else 'after_log'}")
        else:
            faults.append(f"{FaultKind.MID_WRITE}/thread_hook")
    # Transfers with a fault are spread over the run (never the very first one).
    chosen = dict(zip(rng.sample(range(1, cfg.transfers), len(faults)), faults, strict=True))
    return [Transfer(*draft, fault=chosen.get(n)) for n, draft in enumerate(drafts)]


# --- job specs -----------------------------------------------------------------------------------------


def transfer_spec(accounts: str, t: Transfer) -> dict[str, Any]:
    """The MERGE moving ``t.amount`` from ``t.src`` to ``t.dst`` (pinned to their branches by the keys)."""
    return {
        "operation": "merge",
        "table": accounts,
        "source": {
            "kind": "rows",
            "schema": LEGS_SCHEMA,
            "rows": [[t.src_branch, t.src, -t.amount], [t.dst_branch, t.dst, t.amount]],
        },
        "options": {
            "keys": ["branch", "account"],
            "when_matched": [{"action": "update", "set": {"balance": "t.balance + s.delta"}}],
            "when_not_matched": [],
        },
        "txn": {"app_id": f"chaos/transfer/{t.id}", "version": 1},
        "commit_retry": RETRY_POLICY,
        "spark_conf": JOB_CONF,
    }


def append_log(log_table: str, t: Transfer) -> str:
    """Append ``t`` to the transfer log with delta-rs under its own identity ``chaos/log/<id>`` version 1.

    The log is the run's ledger, written by an engine independent of the one under test (and cheaply: no
    Spark job). A transfer is never logged by two runs at once, so checking the recorded identity first
    and committing it with the row makes the append exactly-once, like the engine's own pre-check.

    :returns: ``committed``, or ``skipped_duplicate`` when the identity was already recorded.
    """
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    app_id = f"chaos/log/{t.id}"
    if DeltaTable(log_table).transaction_version(app_id) is not None:
        return "skipped_duplicate"
    row = pa.table(
        {
            "transfer_id": [t.id],
            "src": [t.src],
            "dst": [t.dst],
            "amount": pa.array([t.amount], pa.int64()),
        }
    )
    write_deltalake(
        log_table,
        row,
        mode="append",
        commit_properties=CommitProperties(
            app_transactions=[Transaction(app_id, 1)], max_commit_retries=1000
        ),
    )
    return "committed"


def open_spec(accounts: str, n: int, branch: str) -> dict[str, Any]:
    """A blind append of a new zero-balance account."""
    return {
        "operation": "append",
        "table": accounts,
        "source": {"kind": "rows", "schema": ACCOUNTS_SCHEMA, "rows": [[branch, f"{branch}-new{n}", 0]]},
        "options": {"create_if_missing": False},
        "txn": {"app_id": f"chaos/open/{n}", "version": 1},
        "commit_retry": RETRY_POLICY,
        "spark_conf": JOB_CONF,
    }


def optimize_spec(accounts: str) -> dict[str, Any]:
    return {"operation": "optimize", "table": accounts, "commit_retry": RETRY_POLICY, "spark_conf": JOB_CONF}


def schema_spec(accounts: str) -> dict[str, Any]:
    return {
        "operation": "sql",
        "table": accounts,
        "options": {
            "statement": f"ALTER TABLE {{table}} ADD COLUMNS ({ADDED_COLUMN} STRING)",
            "op_class": "schema_changing",
        },
        "commit_retry": RETRY_POLICY,
        "spark_conf": JOB_CONF,
    }


# --- results ---------------------------------------------------------------------------------------------


@dataclass
class ChaosResult:
    """What a run did and what its checks found."""

    config: ChaosConfig
    transfers: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    fault_detail: Counter[str] = field(default_factory=Counter)
    conflicts: Counter[str] = field(default_factory=Counter)
    retries: int = 0
    reruns: int = 0
    victim_reruns: Counter[str] = field(default_factory=Counter)
    jobs: Counter[str] = field(default_factory=Counter)
    skipped_duplicates: int = 0
    lease_waits_s: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    check_s: float = 0.0
    violations: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The figures, one per line."""
        c = self.config
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        detail = ", ".join(f"{k} {v}" for k, v in sorted(self.fault_detail.items())) or "none"
        conflicts = ", ".join(f"{k} {v}" for k, v in self.conflicts.most_common()) or "none"
        jobs = ", ".join(f"{k} {v}" for k, v in sorted(self.jobs.items()))
        waits = ", ".join(f"{w:.2f}" for w in self.lease_waits_s) or "none"
        victim_reruns = ", ".join(f"{k} {v}" for k, v in self.victim_reruns.most_common()) or "none"
        return [
            f"chaos: {c.writers} writers, {self.transfers}/{c.transfers} transfers, seed {c.seed}",
            f"faults injected: {sum(self.faults.values())} ({faults})",
            f"  by point: {detail}",
            f"jobs run: {jobs}",
            f"in-job retries: {self.retries}; re-runs with the same identity: {self.reruns}; "
            f"skipped duplicates: {self.skipped_duplicates}",
            f"victims' own MERGE re-runs, by reason: {victim_reruns}",
            f"conflicts by kind: {conflicts}",
            f"lease waits after a kill (s, TTL {c.lease_ttl_s}): {waits}",
            f"figures: {json.dumps(self.figures, sort_keys=True)}",
            f"wall time: {self.wall_s:.1f} s (+ {self.check_s:.1f} s invariant checks); "
            f"CPU {self.cpu_s:.0f} s (this process, its JVM and children)",
            f"invariant violations: {len(self.violations)}",
            *[f"  VIOLATION: {v}" for v in self.violations],
        ]


# --- the supervisor --------------------------------------------------------------------------------------


class _Supervisor:
    def __init__(
        self, spark: SparkSession, cfg: ChaosConfig, workdir: Path, transfers: list[Transfer]
    ) -> None:
        self.spark = spark
        self.cfg = cfg
        self.workdir = workdir
        self.accounts = str(workdir / "accounts")
        self.log_table = str(workdir / "transfer_log")
        self.lease_url = f"sqlite:///{workdir / 'leases.db'}"
        self.plan = transfers
        self.result = ChaosResult(cfg)
        self.lock = threading.Lock()
        self.progress = threading.Condition(self.lock)
        self.done: set[str] = set()
        self.pending_fault: dict[str, str] = {t.id: t.fault for t in transfers if t.fault}
        self.expect_rerun: dict[str, str] = {}
        self.queue: queue.Queue[Transfer | None] = queue.Queue()
        self.stop = threading.Event()
        self.started = 0.0
        self.threads: list[threading.Thread] = []
        self.children: list[subprocess.Popen[str]] = []

    # bookkeeping

    def violation(self, text: str) -> None:
        log.error("chaos violation: %s", text)
        with self.lock:
            self.result.violations.append(text)

    def fault(self, t: Transfer | None, kind: FaultKind, detail: str) -> None:
        with self.lock:
            self.result.faults[kind.value] += 1
            self.result.fault_detail[detail] += 1

    def account(self, job: str, report: dict[str, Any] | None) -> None:
        """Count a job's attempts and conflicts."""
        with self.lock:
            self.result.jobs[job] += 1
            if not report:
                return
            attempts = report.get("attempts") or []
            self.result.retries += max(0, len(attempts) - 1)
            for attempt in attempts:
                conflict = attempt.get("conflict")
                if conflict:
                    self.result.conflicts[str(conflict["kind"]).upper()] += 1
            if report.get("status") == "skipped_duplicate":
                self.result.skipped_duplicates += 1

    def completed(self) -> int:
        with self.lock:
            return len(self.done)

    def wait_progress(self, fraction: float) -> bool:
        """Wait until ``fraction`` of the transfers are done; False if the run stopped first."""
        target = int(fraction * self.cfg.transfers)
        with self.progress:
            while len(self.done) < target and not self.stop.is_set():
                self.progress.wait(0.5)
        return not self.stop.is_set()

    def finish(self, t: Transfer) -> None:
        with self.progress:
            self.done.add(t.id)
            self.result.transfers = len(self.done)
            self.progress.notify_all()
            if len(self.done) == len(self.plan):
                self.stop.set()

    def requeue(self, t: Transfer, why: str) -> None:
        log.info("re-running transfer %s with the same identity (%s)", t.id, why)
        with self.lock:
            self.result.reruns += 1
        self.queue.put(t)

    # jobs

    def run(self, job: str, spec: dict[str, Any], hook: Any = None) -> tuple[int, dict[str, Any]]:
        from airflow_provider_deltacc.spark_job.main import run_job

        code, report = run_job(spec, self.spark, source_hook=hook)
        self.account(job, report)
        if code != 0:
            error = report.get("error") or {}
            log.warning(
                "%s job failed (exit %s): %s; %s: %s",
                job,
                code,
                report.get("summary"),
                error.get("type"),
                str(error.get("message", ""))[:500],
            )
        return code, report

    def run_until_ok(self, job: str, spec: dict[str, Any], attempts: int = 5) -> dict[str, Any] | None:
        """A background job, re-run with the same spec (as Airflow retries a task) until it succeeds."""
        for _ in range(attempts):
            code, report = self.run(job, spec)
            if code == 0:
                return report
            with self.lock:
                self.result.reruns += 1
        self.violation(f"{job} job never succeeded after {attempts} runs")
        return None

    def transfer(self, t: Transfer) -> None:
        """One run of a transfer in this thread, with its planned fault if it has not fired yet."""
        with self.lock:
            fault = self.pending_fault.get(t.id)
            fault = fault if fault and "/thread_" in fault else None
            expected = self.expect_rerun.pop(t.id, None)
        hook = _raising_hook(t) if fault == f"{FaultKind.MID_WRITE}/thread_hook" else None
        try:
            code, merge = self.run("merge", transfer_spec(self.accounts, t), hook)
        except WriterKilled:
            self.fired(t, FaultKind.MID_WRITE, "thread_hook", "writer thread killed mid-write")
            return
        if expected is not None:
            self.check_rerun(t, expected, code, merge)
        if code != 0:
            self.requeue(t, f"MERGE job failed: {merge.get('status')}")
            return
        if fault == f"{FaultKind.AFTER_COMMIT}/thread_after_merge" and merge["status"] == "committed":
            self.fired(t, FaultKind.AFTER_COMMIT, "thread_after_merge", "writer thread died after the MERGE")
            return
        logged = append_log(self.log_table, t)
        with self.lock:
            self.result.jobs[f"log {logged}"] += 1
        if fault == f"{FaultKind.AFTER_COMMIT}/thread_after_log" and merge["status"] == "committed":
            self.fired(t, FaultKind.AFTER_COMMIT, "thread_after_log", "writer thread died after both commits")
            return
        self.finish(t)

    def fired(self, t: Transfer, kind: FaultKind, detail: str, why: str) -> None:
        """A fault fired on ``t``: count it, say what its re-run must report, and re-run it."""
        self.fault(t, kind, detail)
        with self.lock:
            self.pending_fault.pop(t.id, None)
            self.expect_rerun[t.id] = "committed" if kind is FaultKind.MID_WRITE else "skipped_duplicate"
        self.requeue(t, why)

    def check_rerun(self, t: Transfer, expected: str, code: int, merge: dict[str, Any]) -> None:
        """Check the first re-run after a fault: an ambiguous commit is found in the log, a mid-write not."""
        status = merge.get("status")
        if code != 0 and expected == "committed":
            # A conflict ended this run; the transfer runs again and must still write exactly once.
            with self.lock:
                self.expect_rerun[t.id] = expected
            return
        if status != expected:
            self.violation(
                f"transfer {t.id}: the re-run after its fault reported {status!r}, not {expected!r}"
            )
        if expected == "skipped_duplicate":
            metrics = merge.get("metrics") or {}
            recorded, committed = metrics.get("recorded_txn_version"), metrics.get("committed_version")
            if recorded != 1 or merge.get("skipped_duplicate") is not True:
                self.violation(f"transfer {t.id}: skipped re-run reports recorded_txn_version {recorded!r}")
            # The version it names must be the very commit that recorded the identity (checked with delta-rs).
            app_id = f"chaos/transfer/{t.id}"
            if not isinstance(committed, int) or _recorded_txn(self.accounts, app_id, committed) != 1:
                self.violation(f"transfer {t.id}: committed_version {committed!r} did not record {app_id}")
            elif committed > 0 and _recorded_txn(self.accounts, app_id, committed - 1) is not None:
                self.violation(f"transfer {t.id}: {app_id} was recorded before committed_version {committed}")

    def writer(self) -> None:
        while not self.stop.is_set():
            try:
                t = self.queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if t is None:
                return
            try:
                self.transfer(t)
            except Exception as exc:  # a bug in the job path: record it, keep the transfer alive
                log.exception("transfer %s raised", t.id)
                self.violation(f"transfer {t.id} raised {type(exc).__name__}: {exc}")
                self.requeue(t, "raised")

    # background actors

    def opener(self) -> None:
        for n in range(self.cfg.opens):
            if not self.wait_progress(0.9 * n / max(1, self.cfg.opens)):
                return
            self.run_until_ok("open", open_spec(self.accounts, n, branch_name(n % self.cfg.branches)))

    def optimizer(self) -> None:
        for n in range(self.cfg.optimizes):
            if not self.wait_progress((n + 1) / (self.cfg.optimizes + 1)):
                return
            self.run_until_ok("optimize", optimize_spec(self.accounts))

    def schema_changer(self) -> None:
        if self.wait_progress(0.4):
            self.run_until_ok("schema", schema_spec(self.accounts))

    def victims(self) -> None:
        """Real Spark driver processes, all started at once (their JVMs start while the writers work)."""
        threads = [
            threading.Thread(
                target=self._guard(f"victim-{t.id}", functools.partial(self.victim, t)), daemon=True
            )
            for t in self.plan
            if t.fault and "/process_" in t.fault
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def victim(self, t: Transfer) -> None:
        point = t.fault.split("/process_")[1] if t.fault else ""
        entered = self.workdir / f"entered-{t.id}"
        jobs = [
            {
                "transfer": dataclasses.asdict(t),
                "merge": transfer_spec(self.accounts, t),
                "log_table": self.log_table,
                "kill": point,
                "entered": str(entered),
            }
        ]
        jobs_file = self.workdir / f"victim-{t.id}.json"
        jobs_file.write_text(json.dumps(jobs), encoding="utf-8")
        stderr_path = self.workdir / f"victim-{t.id}.log"
        with open(stderr_path, "w", encoding="utf-8") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tests.chaos.victim", "--jobs", str(jobs_file)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                start_new_session=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            self.children.append(proc)
            try:
                if point == "mid_write":
                    self._kill_when_entered(proc, entered, t)
                out, _ = proc.communicate(timeout=self.cfg.timeout_s)
            finally:
                kill_group(proc)
        self.account("victim", None)
        self.count_victim_reruns(t, out)
        reported = [
            json.loads(line[len("CHAOS_RESULT ") :])
            for line in out.splitlines()
            if line.startswith("CHAOS_RESULT ")
        ]
        dying = f"CHAOS_DYING {point}" in stderr_path.read_text(encoding="utf-8", errors="replace")
        if proc.returncode == -signal.SIGKILL and not reported and (dying or point == "mid_write"):
            kind = FaultKind.MID_WRITE if point == "mid_write" else FaultKind.AFTER_COMMIT
            recorded = _recorded_txn(self.accounts, f"chaos/transfer/{t.id}")
            if point == "mid_write" and recorded is not None:
                self.violation(f"transfer {t.id}: killed mid-write, yet its MERGE is in the log")
            if point != "mid_write" and recorded != 1:
                self.violation(f"transfer {t.id}: killed after its commit, yet the log records {recorded!r}")
            self.fired(t, kind, f"process_{point}", f"Spark driver process killed ({point})")
            return
        # The fault did not fire (the victim failed on its own, or reported): the transfer is re-run plainly.
        log.warning(
            "victim for %s ended with %s without its fault; see %s", t.id, proc.returncode, stderr_path
        )
        for result in reported:
            self.account("merge", result.get("merge"))
        if reported and reported[0].get("merge_code") == 0 and reported[0].get("log") is not None:
            self.finish(t)
        else:
            self.requeue(t, f"victim process ended with {proc.returncode}")

    def count_victim_reruns(self, t: Transfer, out: str) -> None:
        """Count the victim's own MERGE re-runs by reason: each must be a classified conflict, never bad input
        or a failure the job could not name."""
        for line in out.splitlines():
            if not line.startswith(RERUN_PREFIX):
                continue
            reason = str(json.loads(line[len(RERUN_PREFIX) :])["reason"])
            with self.lock:
                self.result.victim_reruns[reason] += 1
            if not reason.startswith("conflict:"):
                self.violation(f"transfer {t.id}: the victim re-ran its MERGE after {reason}, not a conflict")

    def _kill_when_entered(self, proc: subprocess.Popen[str], entered: Path, t: Transfer) -> None:
        deadline = time.monotonic() + self.cfg.timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            if entered.exists():
                os.killpg(proc.pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    def lease_chaos(self) -> None:
        """Kill lease holders; the follower (gated OPTIMIZE, or a writer) must wait out the TTL, then run."""
        from airflow_provider_deltacc.leases import store_from_url

        lease_transfers = [t for t in self.plan if t.kind is FaultKind.LEASE_HOLDER]
        store = store_from_url(self.lease_url)
        ctx = multiprocessing.get_context("spawn")
        try:
            for k, t in enumerate(lease_transfers):
                if not self.wait_progress((k + 0.5) / (len(lease_transfers) + 1)):
                    return
                self.lease_fault(store, ctx, k, t)
        finally:
            store.close()

    def lease_fault(self, store: Any, ctx: Any, k: int, t: Transfer) -> None:
        from airflow_provider_deltacc.contract.op_kinds import OpKind
        from airflow_provider_deltacc.gate import decide_gate
        from airflow_provider_deltacc.leases import (
            LeaseRequest,
            hold_lease,
            maintenance_conflicts,
            maintenance_lease_conflicts,
        )

        writer_lease = t.fault is not None and t.fault.endswith("writer_lease")
        holder_name = f"chaos.holder{k}"
        branches = sorted({t.src_branch, t.dst_branch})
        ready = ctx.Event()
        holder = ctx.Process(
            target=_hold_lease_target,
            args=(
                self.lease_url,
                self.accounts,
                holder_name,
                "MERGE" if writer_lease else "OPTIMIZE",
                [{"branch": b} for b in branches] if writer_lease else None,
                self.cfg.lease_ttl_s,
                self.cfg.lease_ttl_s / 8,
                ready,
            ),
        )
        holder.start()
        try:
            if not ready.wait(timeout=120):
                self.violation(f"lease holder {k} never acquired its lease")
                self.queue.put(t)
                return
            [dead] = [lease for lease in store.active(self.accounts) if lease.holder == holder_name]
            assert holder.pid is not None
            os.kill(holder.pid, signal.SIGKILL)
            holder.join(timeout=30)
        finally:
            if holder.is_alive():
                holder.kill()
                holder.join(timeout=30)
        if holder.exitcode != -signal.SIGKILL:
            self.violation(f"lease holder {k} ended with {holder.exitcode}, not SIGKILL")
        self.fault(t, FaultKind.LEASE_HOLDER, "writer_lease" if writer_lease else "maintenance_lease")
        killed_at = store.now()
        deadline = time.monotonic() + self.cfg.lease_ttl_s + 60
        if writer_lease:
            # Maintenance: the gate waits for the dead writer's lease, then OPTIMIZE takes its own lease.
            maintenance = None
            while time.monotonic() < deadline:
                decision = decide_gate(self.accounts, OpKind.OPTIMIZE, store=store)
                if decision.go:
                    request = LeaseRequest(self.accounts, f"chaos.maintenance{k}", OpKind.OPTIMIZE, ttl_s=300)
                    got = store.try_acquire(request, maintenance_conflicts(OpKind.OPTIMIZE))
                    if got.lease is not None:
                        maintenance = got.lease
                        break
                time.sleep(0.1)
            go_at = store.now()
            if maintenance is None:
                self.violation(f"the gate never let OPTIMIZE run after lease holder {k} died")
            else:
                try:
                    self.run_until_ok("optimize", optimize_spec(self.accounts))
                finally:
                    store.release(maintenance.lease_id)
            # The lease fault's transfer is an ordinary transfer afterwards.
            self.queue.put(t)
        else:
            # A writer: its lease waits (bounded) for the dead OPTIMIZE lease, then it writes.
            request = LeaseRequest(
                self.accounts,
                f"chaos.writer-after{k}",
                OpKind.MERGE,
                partitions=[{"branch": b} for b in branches],
            )
            with hold_lease(
                store,
                request,
                conflicts=maintenance_lease_conflicts(OpKind.MERGE, [{"branch": b} for b in branches]),
                wait_timeout_s=self.cfg.lease_ttl_s + 60,
                poll_s=0.05,
            ) as held:
                go_at = store.now()
                if not held.acquired:
                    self.violation(f"the writer never got its lease after lease holder {k} died")
                self.transfer(t)
        final = store.get(dead.lease_id)
        if final is None or final.released_at is not None:
            self.violation(f"lease holder {k}'s lease was released, not expired: {final}")
        elif go_at < final.expires_at:
            self.violation(
                f"lease holder {k}: the follower ran at {go_at} before the lease expired ({final.expires_at})"
            )
        elif go_at - final.expires_at > timedelta(seconds=10):
            self.violation(
                f"lease holder {k}: the follower waited {go_at - final.expires_at} past the expiry"
            )
        with self.lock:
            self.result.lease_waits_s.append((go_at - killed_at).total_seconds())

    # the run

    def execute(self) -> None:
        self.started = time.monotonic()
        reserved = {
            t.id
            for t in self.plan
            if t.fault and ("/process_" in t.fault or t.kind is FaultKind.LEASE_HOLDER)
        }
        for t in self.plan:
            if t.id not in reserved:
                self.queue.put(t)
        actors: list[tuple[str, Callable[[], None]]] = [
            *[(f"writer{n}", self.writer) for n in range(self.cfg.writers)],
            ("opener", self.opener),
            ("optimizer", self.optimizer),
            ("schema", self.schema_changer),
            ("victims", self.victims),
            ("leases", self.lease_chaos),
        ]
        for name, target in actors:
            thread = threading.Thread(target=self._guard(name, target), name=f"chaos-{name}", daemon=True)
            self.threads.append(thread)
            thread.start()
        if not self.stop.wait(self.cfg.timeout_s):
            self.violation(
                f"the run did not finish within {self.cfg.timeout_s:.0f} s: {self.completed()} done"
            )
            self.stop.set()
        for _ in range(self.cfg.writers):
            self.queue.put(None)
        for thread in self.threads:
            thread.join(timeout=120)
            if thread.is_alive():
                self.violation(f"{thread.name} did not stop")
        for proc in self.children:
            kill_group(proc)
        self.result.wall_s = time.monotonic() - self.started

    def _guard(self, name: str, target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except Exception as exc:
                log.exception("chaos actor %s failed", name)
                self.violation(f"actor {name} failed: {type(exc).__name__}: {exc}")

        return run


def _hold_lease_target(*args: Any) -> None:
    from tests.chaos.leases import hold_until_killed

    hold_until_killed(*args)


def _raising_hook(t: Transfer) -> Callable[[DataFrame, int], DataFrame]:
    def hook(frame: DataFrame, attempt: int) -> DataFrame:
        raise WriterKilled(f"writer of {t.id} killed inside its write (attempt {attempt})")

    return hook


def _recorded_txn(table: str, app_id: str, version: int | None = None) -> int | None:
    from deltalake import DeltaTable

    return DeltaTable(table, version=version).transaction_version(app_id)


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a child's process group (it was started in a new session) and reap it."""
    # Also when the leader is gone: its JVM or Python workers may not be.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait(timeout=30)


# --- set-up, run, checks ----------------------------------------------------------------------------------


def create_tables(spark: SparkSession, accounts: str, log_table: str, cfg: ChaosConfig) -> None:
    """Create the accounts through the engine (an append that creates), the log with delta-rs."""
    from airflow_provider_deltacc.spark_job.main import run_job

    rows = [list(r) for r in initial_accounts(cfg)]
    code, report = run_job(
        {
            "operation": "append",
            "table": accounts,
            "source": {"kind": "rows", "schema": ACCOUNTS_SCHEMA, "rows": rows},
            "options": {"partition_by": ["branch"]},
            "spark_conf": JOB_CONF,
        },
        spark,
    )
    assert code == 0, report
    import pyarrow as pa
    from deltalake import write_deltalake

    schema = pa.schema(
        [("transfer_id", pa.string()), ("src", pa.string()), ("dst", pa.string()), ("amount", pa.int64())]
    )
    # One commit per transfer: without checkpoints every delta-rs load would replay the whole log again.
    write_deltalake(
        log_table, schema.empty_table(), mode="error", configuration={"delta.checkpointInterval": "10"}
    )


def cpu_seconds() -> float:
    """CPU seconds used so far by this process, its reaped children and its live children (the JVM)."""
    import resource

    total = time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    total += resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # fields[1] is the parent pid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def run_chaos(spark: SparkSession, workdir: Path, cfg: ChaosConfig) -> ChaosResult:
    """Create the tables, run the workload with its faults, then check every invariant.

    :param spark: a Delta-enabled session (the writers' JVM).
    :param workdir: an empty directory for the tables, the lease store and the victims' files.
    :param cfg: the size of the run.
    """
    transfers = plan(cfg)
    supervisor = _Supervisor(spark, cfg, workdir, transfers)
    create_tables(spark, supervisor.accounts, supervisor.log_table, cfg)
    cpu_before = cpu_seconds()
    supervisor.execute()
    result = supervisor.result
    result.cpu_s = cpu_seconds() - cpu_before
    started = time.monotonic()
    violations, figures = check_invariants(supervisor.accounts, supervisor.log_table, cfg, transfers)
    result.violations.extend(violations)
    result.figures = figures
    for kind in FaultKind:
        planned = sum(1 for t in transfers if t.kind is kind)
        if result.faults[kind.value] != planned:
            result.violations.append(f"{planned} {kind} faults planned, {result.faults[kind.value]} fired")
    with supervisor.lock:
        pending = dict(supervisor.expect_rerun)
    if pending:
        result.violations.append(f"faults never followed by a re-run: {sorted(pending)}")
    result.check_s = time.monotonic() - started
    return result


def check_invariants(
    accounts: str, log_table: str, cfg: ChaosConfig, transfers: list[Transfer]
) -> tuple[list[str], dict[str, Any]]:
    """Read both tables with delta-rs and return the violated invariants and the figures.

    - the total balance is the initial total, in the latest version and in every version;
    - account ids are unique (no duplicate rows), and every account opened exactly once;
    - the log has every planned transfer exactly once, as planned;
    - every account's balance is its initial balance plus its legs in the log;
    - each transfer's identity is recorded once (version 1) and each transfer made exactly one MERGE commit;
    - every version of both tables loads; the histories show only the expected operations.
    """
    from deltalake import DeltaTable

    violations: list[str] = []
    initial = {account: balance for _, account, balance in initial_accounts(cfg)}
    planned = {t.id: t for t in transfers}
    total = sum(initial.values())

    acc = DeltaTable(accounts)
    rows = acc.to_pyarrow_table(columns=["branch", "account", "balance"]).to_pylist()
    ids = Counter(r["account"] for r in rows)
    duplicates = sorted(a for a, n in ids.items() if n > 1)
    if duplicates:
        violations.append(f"duplicate account rows: {duplicates[:10]}")
    opened = {f"{branch_name(n % cfg.branches)}-new{n}" for n in range(cfg.opens)}
    expected_ids = set(initial) | opened
    if set(ids) != expected_ids:
        violations.append(
            f"accounts missing {sorted(expected_ids - set(ids))[:10]}, "
            f"unexpected {sorted(set(ids) - expected_ids)[:10]}"
        )
    balance_total = sum(r["balance"] for r in rows)
    if balance_total != total:
        violations.append(f"total balance {balance_total} != initial total {total}")

    logged = DeltaTable(log_table).to_pyarrow_table().to_pylist()
    counts = Counter(r["transfer_id"] for r in logged)
    repeated = sorted(i for i, n in counts.items() if n > 1)
    if repeated:
        violations.append(f"transfers logged more than once: {repeated[:10]}")
    missing = sorted(set(planned) - set(counts))
    if missing:
        violations.append(f"transfers missing from the log: {missing[:10]} ({len(missing)})")
    unknown = sorted(set(counts) - set(planned))
    if unknown:
        violations.append(f"unplanned transfers in the log: {unknown[:10]}")
    expected_balance = {a: initial.get(a, 0) for a in ids}
    for r in logged:
        t = planned.get(r["transfer_id"])
        if t is None or (r["src"], r["dst"], r["amount"]) != (t.src, t.dst, t.amount):
            violations.append(f"log row {r} does not match the plan")
            continue
        expected_balance[t.src] = expected_balance.get(t.src, 0) - t.amount
        expected_balance[t.dst] = expected_balance.get(t.dst, 0) + t.amount
    wrong = [
        (r["account"], r["balance"], expected_balance.get(r["account"]))
        for r in rows
        if r["balance"] != expected_balance.get(r["account"])
    ]
    if wrong:
        violations.append(f"{len(wrong)} balances differ from initial + logged legs, e.g. {wrong[:5]}")

    unrecorded = [t.id for t in transfers if acc.transaction_version(f"chaos/transfer/{t.id}") != 1]
    if unrecorded:
        violations.append(f"transfers without their txn identity in accounts: {unrecorded[:10]}")

    history = acc.history()
    operations = Counter(str(h.get("operation")) for h in history)
    unexpected = sorted(set(operations) - ALLOWED_ACCOUNT_OPS)
    if unexpected:
        violations.append(f"unexpected operations in the accounts history: {unexpected}")
    if operations["MERGE"] != len(transfers):
        violations.append(f"{operations['MERGE']} MERGE commits for {len(transfers)} transfers")
    if operations["ADD COLUMNS"] != 1:
        violations.append(f"{operations['ADD COLUMNS']} ADD COLUMNS commits, expected 1")
    log_history = DeltaTable(log_table).history()
    log_ops = Counter(str(h.get("operation")) for h in log_history)
    if set(log_ops) - ALLOWED_LOG_OPS:
        violations.append(
            f"unexpected operations in the log history: {sorted(set(log_ops) - ALLOWED_LOG_OPS)}"
        )
    if sum(log_ops.values()) != len(transfers) + 1:
        violations.append(f"{sum(log_ops.values())} log commits for {len(transfers)} transfers (+1 create)")

    bad_versions = every_version(accounts, adds_up_to("balance", total))
    if bad_versions:
        violations.append(f"accounts versions unreadable or off-total: {bad_versions[:10]}")
    # The log only grows (one file per version): every version's snapshot loads and its files exist; the
    # rows themselves are read at every 20th version (reading all of them would read n^2/2 files).
    bad_log_versions = every_version(log_table, _unique_every("transfer_id", 20))
    if bad_log_versions:
        violations.append(f"log versions unreadable or with repeated ids: {bad_log_versions[:10]}")
    figures = {
        "accounts_version": acc.version(),
        "log_version": DeltaTable(log_table).version(),
        "accounts": len(rows),
        "operations": dict(sorted(operations.items())),
    }
    return violations, figures


#: A version check: (the table loaded at that version, the version, the latest version, its data files) to
#: None when the version passes, else what is wrong with it.
VersionCheck = Callable[[Any, int, int, list[str]], str | None]


def every_version(path: str, check: VersionCheck) -> list[str]:
    """Load every version 0..latest with delta-rs; return the ones that fail to load, miss a data file, or
    fail ``check``."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    latest = table.version()
    bad: list[str] = []
    for version in range(latest + 1):
        try:
            table.load_as_version(version)
            files = [uri.removeprefix("file://") for uri in table.file_uris()]
            missing = [f for f in files if not Path(f).exists()]
            if missing:
                bad.append(f"v{version}: missing files {missing[:3]}")
                continue
            problem = check(table, version, latest, files)
        except Exception as exc:
            bad.append(f"v{version}: {type(exc).__name__}: {exc}")
            continue
        if problem is not None:
            bad.append(f"v{version}: {problem}")
    return bad


def adds_up_to(column: str, total: int) -> VersionCheck:
    """``column`` sums to ``total`` in every version.

    Data files never change, so each one is read once and its sum reused by every version that lists it;
    a version whose files carry deletion vectors is read whole instead.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    sums: dict[str, int] = {}

    def check(table: Any, version: int, latest: int, files: list[str]) -> str | None:
        actions = pa.table(table.get_add_actions(flatten=True)).to_pydict()
        if any(
            k.startswith("deletionVector") and any(v is not None for v in vs) for k, vs in actions.items()
        ):
            found = sum(table.to_pyarrow_table(columns=[column]).column(column).to_pylist())
        else:
            for f in files:
                if f not in sums:
                    sums[f] = pc.sum(pq.read_table(f, columns=[column]).column(column)).as_py() or 0
            found = sum(sums[f] for f in files)
        return None if found == total else f"total {found}"

    return check


def _unique_every(column: str, read_every: int) -> VersionCheck:
    """``column`` holds no value twice, read at every ``read_every``-th version and at the latest."""

    def check(table: Any, version: int, latest: int, files: list[str]) -> str | None:
        if version % read_every and version != latest:
            return None
        values = table.to_pyarrow_table(columns=[column]).column(column).to_pylist()
        return None if len(values) == len(set(values)) else f"repeated {column} values"

    return check
