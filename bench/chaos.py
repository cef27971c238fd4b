"""The chaos workload of ``tests/chaos``, longer and configurable; exits 1 on any invariant violation.

Bank transfers (MERGEs moving money between accounts of a Delta table partitioned by branch, each logged in
a transfer-log table) by concurrent writer threads through the engine and its commit loop, mixed with
appends of new accounts, OPTIMIZE and one schema change, with faults injected: writers killed after their
commit and before they report (threads and real Spark driver processes), writers killed mid-write, lease
holders killed. Afterwards delta-rs checks every invariant (see ``tests/chaos/workload.py``).

Prints transfers, faults by kind, in-job retries, re-runs, conflicts by kind, wall time and violations.
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
    parser = argparse.ArgumentParser(description=__doc__)
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


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter finalization: a Spark gateway plus pyarrow's thread pools can abort at exit.
    os._exit(status)
