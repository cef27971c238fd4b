"""Stage 2 of the demo: the example pipeline DAGs under Airflow, on an embedded SQLite metadata DB.

Runs ``example_deltacc_ingestion_staging`` (sources landing concurrently through
staging-append-then-merge) and then ``example_deltacc_maintenance`` (gate, OPTIMIZE, VACUUM) with
``dag.test()``, the jobs running in-process on the demo's Spark session and the leases in the embedded
SQLite store, and returns printable lines: every task's state and try, what each Delta job reported, the
maintenance decisions, and the final table.

Airflow's own log lines (the DAG bag, ``dag.test()``'s scheduling loop and every task's log, which Airflow
writes to this process's stdout and stderr) go to a log file, not the terminal: file descriptors 1 and 2 are
pointed at it while Airflow runs (:func:`output_to`), so whatever holds on to the terminal's streams
(structlog's and logging's handlers) writes there too. The Spark JVM is a child process with descriptors of
its own: the demo starts it inside :func:`output_to` as well, so its output goes to a file from the start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

INGESTION_DAG = "example_deltacc_ingestion_staging"
MAINTENANCE_DAG = "example_deltacc_maintenance"


def configure(workdir: Path, dags_folder: Path) -> None:
    """Point Airflow and the example DAGs at the demo directory; call before anything imports airflow."""
    home = workdir / "airflow-home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "DELTACC_EXAMPLE_ROOT": str(workdir / "examples"),
            "DELTACC_EXECUTION_MODE": "in_process",
            "DELTACC_EXAMPLE_SOURCES": "3",
            "DELTACC_LEASE_STORE_URL": f"sqlite:///{workdir / 'leases.db'}",
        }
    )


def migrate_db() -> None:
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True)


def _xcom(dag_id: str, run_id: str, task_id: str, key: str, map_index: int) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = (
            session.query(XComModel)
            .filter_by(dag_id=dag_id, run_id=run_id, task_id=task_id, key=key, map_index=map_index)
            .one_or_none()
        )
        return None if row is None else XComModel.deserialize_value(row)


def _task_lines(dr: Any) -> tuple[list[str], int]:
    lines, conflicts = [], 0
    for ti in sorted(dr.get_task_instances(), key=lambda t: (t.start_date or t.end_date, t.task_id)):
        name = ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else "")
        line = f"  {name:<38} {ti.state!s:<8} try {ti.try_number}"
        report = _xcom(dr.dag_id, dr.run_id, ti.task_id, "deltacc_report", ti.map_index)
        if report:
            attempts = report.get("attempts") or []
            kinds = [a["conflict"]["kind"].upper() for a in attempts if a.get("conflict")]
            conflicts += len(kinds)
            outcome = "skipped duplicate" if report.get("skipped_duplicate") else report.get("status")
            line += f"  {report.get('operation')} {outcome} v{report.get('table_version')}"
            line += f", {len(attempts)} attempt(s)" + (f", conflicts: {', '.join(kinds)}" if kinds else "")
        lines.append(line)
    return lines, conflicts


@contextmanager
def output_to(path: Path) -> Iterator[None]:
    """Send everything this process writes to stdout and stderr to ``path`` (appended) for the block.

    Redirects the file descriptors, not just ``sys.stdout``: Airflow's log handlers keep the stream objects
    they were configured with, and a child process started in the block (a Spark JVM) inherits the file for
    its whole life.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        with path.open("ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


def run_pipeline(log_path: Path) -> tuple[list[str], bool]:
    """Run both DAGs, Airflow's log lines going to ``log_path``; return the report lines and whether
    everything succeeded."""
    from deltalake import DeltaTable

    print(f"[airflow] Airflow's own log (the DAG runs, every task's log) goes to {log_path}", flush=True)
    with output_to(log_path):
        from airflow.dag_processing.dagbag import DagBag

        bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    if bag.import_errors:
        return [f"DAG import errors: {bag.import_errors}"], False
    lines: list[str] = []
    ok = True
    for dag_id in (INGESTION_DAG, MAINTENANCE_DAG):
        dag = bag.dags[dag_id]
        print(f"[airflow] dag.test() {dag_id}", flush=True)
        with output_to(log_path):
            dr = dag.test()
        print(f"[airflow] {dag_id}: {dr.state}", flush=True)
        task_lines, conflicts = _task_lines(dr)
        lines.append(
            f"{dag_id}: {dr.state} ({len(task_lines)} task instances, {conflicts} conflicts retried)"
        )
        lines += task_lines
        ok = ok and str(dr.state) == "success"
        if dag_id == MAINTENANCE_DAG:
            decision = _xcom(dr.dag_id, dr.run_id, "table_maintenance.gate", "return_value", -1) or {}
            if decision:
                lines.append(f"  maintenance gate decided {decision.get('reason')}")
    target = bag.dags[INGESTION_DAG].get_task("ingest_orders.merge_batches").table
    table = DeltaTable(target)
    history = sorted(table.history(), key=lambda h: h["version"])
    lines.append(
        f"target {target}: version {table.version()}, {len(table.to_pyarrow_table())} rows; commits: "
        + ", ".join(h["operation"] for h in history)
    )
    lines.append(f"Airflow's log of both runs: {log_path}")
    return lines, ok
