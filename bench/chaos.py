"""The chaos workload of ``tests/chaos``, longer and configurable; exits 1 on any invariant violation.

Bank transfers (MERGEs moving money between accounts of a Delta table partitioned by branch, each logged in
a transfer-log table) by concurrent writer threads through the engine and its commit loop, mixed with
appends of new accounts, OPTIMIZE and one schema change, with faults injected: writers killed after their
commit and before they report (threads and real Spark driver processes), writers killed mid-write, lease
holders killed. Afterwards delta-rs checks every invariant (see ``tests/chaos/workload.py``).

Prints transfers, faults by kind, in-job retries, re-runs, conflicts by kind, wall time and violations.

``--airflow`` runs the transfers through a real Airflow instead (``tests/chaos/airflow_workload.py``): mapped
MERGE tasks over a Spark Connect server with the PostgreSQL lease store, task processes SIGKILLed mid-MERGE
and after their commit, the scheduler killed and restarted, the lease store stopped for a while. It starts
its own PostgreSQL servers (Airflow's metadata, the lease store), Connect server and Airflow stack, and prints
the faults, tries, lost and duplicated transfers and violations.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path

from _common import session  # also puts the repository root on sys.path


def main() -> int:
    from tests.chaos.workload import ChaosConfig, run_chaos

    defaults = ChaosConfig()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--airflow", action="store_true", help="run the transfers through a real Airflow")
    parser.add_argument("--task-kills", type=int, default=4, help="--airflow: task processes SIGKILLed")
    parser.add_argument("--parallelism", type=int, default=6, help="--airflow: the LocalExecutor's slots")
    parser.add_argument("--writers", type=int, default=defaults.writers)
    parser.add_argument("--transfers", type=int, default=400)
    parser.add_argument("--faults", type=int, default=40)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--branches", type=int, default=defaults.branches)
    parser.add_argument("--process-kills", type=int, default=defaults.process_kills)
    parser.add_argument("--lease-kills", type=int, default=defaults.lease_kills)
    parser.add_argument("--opens", type=int, default=defaults.opens)
    parser.add_argument("--optimizes", type=int, default=defaults.optimizes)
    parser.add_argument("--timeout", type=float, default=1800.0, help="abandon the run after this many s")
    parser.add_argument("--workdir", help="where the tables go (default: a new temporary directory)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every re-run and conflict")
    args = parser.parse_args()
    if args.airflow:
        return run_through_airflow(args)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s",
    )
    cfg = ChaosConfig(
        writers=args.writers,
        transfers=args.transfers,
        faults=args.faults,
        seed=args.seed,
        branches=args.branches,
        process_kills=args.process_kills,
        lease_kills=args.lease_kills,
        opens=args.opens,
        optimizes=args.optimizes,
        timeout_s=args.timeout,
    )
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    spark = session("bench-chaos")
    result = run_chaos(spark, workdir, cfg)
    print(f"load average before the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; tables in {workdir}")
    for line in result.lines():
        print(line)
    return 1 if result.violations else 0


def run_through_airflow(args: argparse.Namespace) -> int:
    """``--airflow``: the transfers as mapped tasks in a real Airflow, under task, scheduler and lease
    store faults; ``--transfers`` defaults to the test's bounded size there."""
    from tests.chaos.airflow_workload import AirflowChaosConfig, chaos_env, run_airflow_chaos
    from tests.support.airflow_stack import StackOptions, running_stack
    from tests.support.postgres import throwaway_postgres
    from tests.support.spark_connect import running_connect_server

    defaults = AirflowChaosConfig()
    transfers = args.transfers if "--transfers" in sys.argv else defaults.transfers
    cfg = AirflowChaosConfig(
        transfers=transfers,
        mid_merge_kills=args.task_kills // 2,
        after_commit_kills=args.task_kills - args.task_kills // 2,
        seed=args.seed,
        branches=args.branches if "--branches" in sys.argv else defaults.branches,
        parallelism=args.parallelism,
        timeout_s=args.timeout,
    )
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-chaos-airflow-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "connect").mkdir(exist_ok=True)
    load = os.getloadavg()
    with (
        throwaway_postgres() as (_metadata_server, metadata_url),
        throwaway_postgres() as (lease_server, lease_url),
        running_connect_server(workdir / "connect") as connect,
    ):
        env = chaos_env(workdir / "run", lease_url=lease_url, connect_uri=connect.conn_uri)
        options = StackOptions(env=env, parallelism=cfg.parallelism)
        with running_stack(workdir / "airflow", metadata_url, options) as stack:
            result = run_airflow_chaos(stack, cfg, lease_server=lease_server)
    print(f"load average before the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; work in {workdir}")
    for line in result.lines():
        print(line)
    return 1 if result.violations or result.lost or result.duplicated else 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalization: a Spark gateway plus pyarrow's thread pools can abort at exit.
    os._exit(status)
