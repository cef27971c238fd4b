"""Per-task latency of a thin task: spark-submit, Spark Connect and in-process, side by side in one run.

    .venv/bin/python bench/latency.py [--rounds 5] [--merge-rows 1000]

Every measurement is one ``DeltaCCHook.run`` (what a Delta task does between its lease and its XCom push):

- ``append``: a 1-row append with its own txn identity;
- ``merge``: a 1,000-row MERGE pinned to one partition of a 2-partition table, with its own txn identity;
- ``rerun``: the append again with the same identity, already committed (the task cleared and run again).

Modes: ``spark_submit`` (a ``spark`` connection with a ``local[2]`` master: a driver JVM per task),
``spark_connect`` (a Delta-enabled Connect server started by this script and warmed before timing; each task
takes over the session an earlier task kept warm, as tasks on one worker do), ``spark_connect_new`` (a
second server of its own, through a connection with ``"session_reuse": false``: a new session for every
task) and ``in_process`` (a local session in this process, warmed before timing).
Both long-lived JVMs get the same untimed warm-up runs first (``--warmup``): a Connect server is a service
that stays up, and its JIT-compiled code is what tasks meet. Rounds rotate the order of the modes. The
script prints medians and the issue's goals:

- spark_connect <= 0.15x spark_submit, and <= 1.5x in_process (warm), for append and merge;
- what a kept session saves: spark_connect / spark_connect_new (no goal);
- the re-run <= 0.2x its first run, with no Spark started (the hook never built a runner).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import ROOT, median, mode_hook, now

MODES = ("spark_submit", "spark_connect", "spark_connect_new", "in_process")
SUBMIT_CONN = "bench_latency_submit"
CONNECT_CONN = "bench_latency_connect"
CONNECT_NEW_CONN = "bench_latency_connect_new"
SCHEMA = "id BIGINT, day STRING, value STRING"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_connect_server(work: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``deltacc-connect-server`` on a free port and wait until it serves."""
    port = _free_port()
    work.mkdir(parents=True, exist_ok=True)
    log = work / "connect-server.log"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "airflow_provider_deltacc.deployment.connect_server",
            "--port",
            str(port),
            "--master",
            "local[2]",
        ],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=work,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    deadline = time.monotonic() + 180
    while "Spark Connect server started" not in log.read_text(errors="replace"):
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"the Connect server did not start:\n{log.read_text(errors='replace')[-3000:]}"
            )
        time.sleep(0.25)
    return server, port


def _hook(mode: str) -> Any:
    if mode == "spark_connect_new":
        return mode_hook(
            "spark_connect", job_name="bench-latency", submit_conn=SUBMIT_CONN, connect_conn=CONNECT_NEW_CONN
        )
    return mode_hook(mode, job_name="bench-latency", submit_conn=SUBMIT_CONN, connect_conn=CONNECT_CONN)


def append_spec(table: str, app_id: str, version: int) -> dict[str, Any]:
    return {
        "operation": "append",
        "table": table,
        "source": {"kind": "rows", "rows": [[version, "2026-11-20", "a"]], "schema": SCHEMA},
        "options": {"partition_by": ["day"]},
        "txn": {"app_id": app_id, "version": version},
    }


def merge_spec(table: str, app_id: str, version: int, rows: int) -> dict[str, Any]:
    source = [[i, "2026-11-20", f"v{version}"] for i in range(rows)]
    return {
        "operation": "merge",
        "table": table,
        "source": {"kind": "rows", "rows": source, "schema": SCHEMA},
        "options": {"keys": ["id", "day"]},
        "txn": {"app_id": app_id, "version": version},
    }


def timed(mode: str, spec: dict[str, Any]) -> tuple[float, dict[str, Any], bool]:
    """Seconds one hook run took, its report, and whether it started anything (built a runner)."""
    hook = _hook(mode)
    start = now()
    report = hook.run(spec)
    return now() - start, report, "runner" in hook.__dict__


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--merge-rows", type=int, default=1000)
    parser.add_argument(
        "--warmup", type=int, default=8, help="untimed append+merge runs in each long-lived JVM first"
    )
    parser.add_argument("--verbose", action="store_true", help="print every sample")
    parser.add_argument("--modes", default=",".join(MODES), help="the modes to time (a ratio needs its two)")
    args = parser.parse_args()
    os.environ.setdefault("DELTACC_LEASE_STORE_URL", "sqlite:///" + tempfile.mkdtemp() + "/leases.db")
    work = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    modes = tuple(args.modes.split(","))
    os.environ[f"AIRFLOW_CONN_{SUBMIT_CONN.upper()}"] = json.dumps({"conn_type": "spark", "host": "local[2]"})
    # A server per Connect mode: which sessions a server ran last is part of what is measured (a session
    # that ran the server's last operation writes faster), so the two modes must not share one.
    servers = []
    try:
        for mode, conn, reuse in (
            ("spark_connect", CONNECT_CONN, ""),
            ("spark_connect_new", CONNECT_NEW_CONN, "?session_reuse=false"),
        ):
            if mode in modes:
                server, port = start_connect_server(work / mode)
                servers.append(server)
                os.environ[f"AIRFLOW_CONN_{conn.upper()}"] = f"spark-connect://127.0.0.1:{port}{reuse}"
        return run(work, args.rounds, args.merge_rows, args.warmup, args.verbose, modes)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=60)


def run(work: Path, rounds: int, merge_rows: int, warmup: int, verbose: bool, modes: tuple[str, ...]) -> int:
    tables = {mode: (str(work / f"{mode}-append"), str(work / f"{mode}-merge")) for mode in MODES}
    # Set-up, not timed: every table (through the in-process session), then the same warm-up runs in the
    # in-process session and on the Connect server, so both long-lived JVMs have compiled the hot paths
    # (spark-submit has nothing to warm: a JVM per task).
    for mode in MODES:
        append_table, merge_table = tables[mode]
        _hook("in_process").run(append_spec(append_table, "seed", 1))
        seed = merge_spec(merge_table, "seed", 1, merge_rows)
        seed["operation"], seed["options"] = "append", {"partition_by": ["day"]}
        _hook("in_process").run(seed)
        other = append_spec(merge_table, "seed.other", 1)
        other["source"]["rows"] = [[0, "2026-11-21", "other"]]
        _hook("in_process").run(other)
    for mode in ("in_process", *(m for m in ("spark_connect", "spark_connect_new") if m in modes)):
        append_table, merge_table = tables[mode]
        for version in range(1, warmup + 1):
            _hook(mode).run(append_spec(append_table, "warm", version))
            _hook(mode).run(merge_spec(merge_table, "warm", version, merge_rows))
    samples: dict[tuple[str, str], list[float]] = defaultdict(list)
    started_on_rerun: dict[str, bool] = {}
    for r in range(rounds):
        order = modes[r % len(modes) :] + modes[: r % len(modes)]
        for mode in order:
            append_table, merge_table = tables[mode]
            version = 100 + r
            seconds, report, _ = timed(mode, append_spec(append_table, f"{mode}.append", version))
            assert report["status"] == "committed", report
            samples[(mode, "append")].append(seconds)
            seconds, report, started = timed(mode, append_spec(append_table, f"{mode}.append", version))
            assert report["status"] == "skipped_duplicate", report
            samples[(mode, "rerun")].append(seconds)
            started_on_rerun[mode] = started_on_rerun.get(mode, False) or started
            seconds, report, _ = timed(mode, merge_spec(merge_table, f"{mode}.merge", version, merge_rows))
            assert report["status"] == "committed" and report["metrics"].get("partition_pin"), report
            samples[(mode, "merge")].append(seconds)
            if verbose:
                figures = "  ".join(
                    f"{op} {samples[(mode, op)][-1]:.2f}" for op in ("append", "rerun", "merge")
                )
                print(f"round {r + 1}/{rounds} {mode:13s} {figures}", flush=True)
    report_figures(samples, started_on_rerun, rounds, merge_rows, [m for m in MODES if m in modes])
    return 0


def report_figures(
    samples: dict[tuple[str, str], list[float]],
    started: dict[str, bool],
    rounds: int,
    merge_rows: int,
    modes: list[str],
) -> None:
    """Medians of the modes timed, and every ratio whose two modes were timed."""
    med = {key: median(values) for key, values in samples.items()}
    print(f"\nmedian seconds over {rounds} rounds (merge: {merge_rows} rows, pinned to one partition)")
    print(f"{'mode':18s} {'append':>8s} {'merge':>8s} {'rerun':>8s}")
    for mode in modes:
        print(
            f"{mode:18s} {med[(mode, 'append')]:8.2f} {med[(mode, 'merge')]:8.2f} {med[(mode, 'rerun')]:8.3f}"
        )
    print("\nratios (goal)")
    for op in ("append", "merge"):
        if "spark_connect" in modes and "spark_submit" in modes:
            vs_submit = med[("spark_connect", op)] / med[("spark_submit", op)]
            verdict = _verdict(vs_submit, 0.15)
            print(f"  {op:6s} spark_connect / spark_submit      {vs_submit:5.2f}x (<= 0.15) {verdict}")
        if "spark_connect" in modes and "in_process" in modes:
            vs_warm = med[("spark_connect", op)] / med[("in_process", op)]
            verdict = _verdict(vs_warm, 1.5)
            print(f"  {op:6s} spark_connect / in_process (warm) {vs_warm:5.2f}x (<= 1.50) {verdict}")
        if "spark_connect" in modes and "spark_connect_new" in modes:
            kept = med[("spark_connect", op)] / med[("spark_connect_new", op)]
            print(f"  {op:6s} spark_connect / spark_connect_new {kept:5.2f}x (no goal: a kept session)")
    for mode in modes:
        ratio = med[(mode, "rerun")] / med[(mode, "append")]
        jvm = "no Spark started" if not started[mode] else "Spark STARTED"
        print(f"  rerun / first run, {mode:17s}   {ratio:5.2f}x (<= 0.20) {_verdict(ratio, 0.2)}; {jvm}")


def _verdict(ratio: float, goal: float) -> str:
    return "met" if ratio <= goal else f"MISSED by {ratio / goal:.2f}x"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
