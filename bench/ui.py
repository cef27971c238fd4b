"""How fast the Delta conflicts view answers on a metadata DB with 100,000 task instances.

Fills a fresh metadata DB (a throw-away PostgreSQL server by default, ``--sqlite`` for SQLite) with Delta task
instances as the operators leave them: ``task_instance`` rows, a ``task_instance_history`` row with Airflow's
``retry_reason`` for every retried one, and the ``deltacc_report`` XCom listing every try (the reports and
reasons come from the provider's own ``CommitReport``, retry policy and ``try_entry``; see
``tests/support/commit_reports.py``). Then it serves Airflow's whole api-server app in-process (FastAPI's
TestClient, the simple auth manager, a JWT in the ``Authorization`` header, the plugin mounted from its entry
point as the api-server mounts it) and times, alternating in every round:

- ``GET /deltacc/conflicts``, the "Delta conflicts" page: its default (the last 7 days of every table and
  DAG), the whole 30 days, and one table of one DAG over the 30 days;
- ``GET /deltacc/task-instance/...``, the per-task view of a retried task instance;
- baselines, Airflow's own REST API on the same DB: the task-instances list of every DAG and run
  (``/api/v2/dags/~/dagRuns/~/taskInstances``, 50 per page, Airflow's default) and one task instance's tries.

Before the timed rounds it times the first request of the 30-day page, the one that sums every report of the
30 days into the provider's summary table (``ui/summary_fill.py``); every later request finds nothing to sum.
Prints medians side by side and each page's ratio to the baseline, and the query plan of the page's totals.

    .venv/bin/python bench/ui.py [--task-instances 100000] [--rounds 15] [--sqlite]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import ROOT, median, now

TABLES = ("/lake/orders", "/lake/payments", "/lake/customers", "/lake/stock", "/lake/events")
TASKS_PER_RUN = 10
DAGS = 20
RETRIED_SHARE = 0.2


@contextmanager
def _postgres_database() -> Iterator[str]:
    from tests.support.postgres import scratch_database, throwaway_postgres

    with throwaway_postgres() as (_server, url), scratch_database(url, "airflow_bench_ui") as database:
        yield database


def _configure(home: Path, db_url: str) -> None:
    """Airflow reads its configuration at import: everything is set before the first import."""
    passwords = home / "passwords.json"
    passwords.write_text('{"admin": "bench"}')
    (home / "dags").mkdir(exist_ok=True)
    os.environ.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url,
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__API_AUTH__JWT_SECRET": "deltacc-bench-ui-jwt-secret-0123456789abcdef",
            "AIRFLOW__API__SECRET_KEY": "deltacc-bench-ui-secret-key",
        }
    )
    airflow = Path(sys.executable).with_name("airflow")
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())


def _rows(count: int, rng: random.Random) -> Iterator[Any]:
    """``count`` task instances: DAGS DAGs, TASKS_PER_RUN MERGE tasks a run, over the last 30 days; a
    fifth of them lost a conflict on try 1 and committed on try 2."""
    from tests.support.commit_reports import committed_try, final_report, retried_then_committed
    from tests.support.ui_metadata import PastTry, TaskRow

    start = datetime.now(UTC) - timedelta(days=30)
    runs = max(1, count // (DAGS * TASKS_PER_RUN))
    made = 0
    for run in range(runs + 1):
        for dag in range(DAGS):
            ended = start + timedelta(days=30 * run / runs, minutes=dag)
            run_id = f"scheduled__{ended:%Y-%m-%dT%H:%M:%S}"
            for task in range(TASKS_PER_RUN):
                if made == count:
                    return
                made += 1
                table = TABLES[(dag + task) % len(TABLES)]
                version = made + 1
                dag_id, task_id = f"bench_ui_{dag:02d}", f"merge_{task}"
                if rng.random() < RETRIED_SHARE:
                    report, reason = retried_then_committed(
                        table, started_at=ended.timestamp(), version=version
                    )
                    past: tuple[PastTry, ...] = (PastTry(1, retry_reason=reason),)
                    yield TaskRow(dag_id, run_id, task_id, report, try_number=2, past=past, ended=ended)
                else:
                    one = committed_try(table, started_at=ended.timestamp(), version=version)
                    yield TaskRow(dag_id, run_id, task_id, final_report((one, None)), ended=ended)


def _fill(count: int) -> tuple[int, str]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import text

    from tests.support.ui_metadata import add_task_instances

    with create_session() as session:
        added = add_task_instances(session, _rows(count, random.Random(14)))
    with create_session() as session:  # planner statistics, as autovacuum would gather them
        session.execute(text("ANALYZE" if session.bind.dialect.name == "postgresql" else "ANALYZE main"))
    with create_session() as session:
        newest = (
            session.query(XComModel)
            .filter(XComModel.key == "deltacc_report")
            .order_by(XComModel.timestamp.desc())
            .limit(200)
        )
        for row in newest:
            if len(XComModel.deserialize_value(row).get("tries", [])) == 2:
                return added, f"{row.dag_id}/{row.run_id}/{row.task_id}/{row.map_index}"
    raise RuntimeError("no retried task instance was generated")


def _client() -> tuple[Any, dict[str, str]]:
    from airflow.api_fastapi.app import create_app, get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from fastapi.testclient import TestClient

    client = TestClient(create_app())
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
    return client, {"Authorization": f"Bearer {token}"}


def _plan(session: Any) -> str:
    """The plan of the statement that adds up the last 7 days of every DAG (the default page)."""
    from datetime import UTC, datetime

    from airflow_provider_deltacc.ui.aggregate import _totals_sql
    from airflow_provider_deltacc.ui.bound_sql import bound
    from airflow_provider_deltacc.ui.filters import ViewFilters
    from airflow_provider_deltacc.ui.json_sql import json_dialect

    if json_dialect(session.bind.dialect.name) is None:
        return "  (read in Python)"
    filters = ViewFilters.from_query({}, now=datetime.now(UTC))
    dag_ids = [f"bench_ui_{dag:02d}" for dag in range(DAGS)]
    params = {"dag_ids": dag_ids, "since": filters.since, "until": filters.until}
    explain = "EXPLAIN " if session.bind.dialect.name == "postgresql" else "EXPLAIN QUERY PLAN "
    statement = bound(explain + _totals_sql())
    return "\n".join("  " + " ".join(str(c) for c in row) for row in session.execute(statement, params))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--task-instances", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--sqlite", action="store_true", help="SQLite instead of a throw-away PostgreSQL")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="deltacc-bench-ui-") as tmp:
        home = Path(tmp)
        database = nullcontext(f"sqlite:///{home / 'airflow.db'}") if args.sqlite else _postgres_database()
        with database as db_url:
            _configure(home, db_url)
            sys.path.insert(0, str(ROOT))
            began = now()
            added, task_path = _fill(args.task_instances)
            print(
                f"metadata DB: {'SQLite' if args.sqlite else 'PostgreSQL'}, {added} task instances "
                f"({RETRIED_SHARE:.0%} retried once) filled in {now() - began:.1f} s"
            )
            client, headers = _client()
            dag_id, run_id, task_id, _ = task_path.split("/")
            month = (datetime.now(UTC) - timedelta(days=31)).date().isoformat()
            one_table = f"since={month}&table={TABLES[0]}&dag_id=bench_ui_00"
            urls = {
                "conflicts page": "/deltacc/conflicts",
                "conflicts page, 30 days": f"/deltacc/conflicts?since={month}",
                "conflicts, 1 table+DAG": f"/deltacc/conflicts?{one_table}",
                "task view": f"/deltacc/task-instance/{task_path}",
                "REST task-instances list": "/api/v2/dags/~/dagRuns/~/taskInstances",
                "REST one task's tries": f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
                "/tries",
            }
            times: dict[str, list[float]] = {name: [] for name in urls}
            began = now()
            response = client.get(urls["conflicts page, 30 days"], headers=headers)
            first_sum = now() - began
            assert response.status_code == 200, response.text[:300]
            for url in urls.values():  # one untimed request each: imports, first connections
                response = client.get(url, headers=headers)
                if response.status_code != 200:
                    raise RuntimeError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
            for round_ in range(args.rounds):
                names = list(urls) if round_ % 2 == 0 else list(reversed(urls))
                for name in names:
                    began = now()
                    response = client.get(urls[name], headers=headers)
                    times[name].append(now() - began)
                    assert response.status_code == 200, (name, response.status_code)
            from airflow.utils.session import create_session

            with create_session() as session:
                plan = _plan(session)

    print(
        f"\nfirst request of the 30-day page, which sums every report of the 30 days into the summary table "
        f"(the only request that does; the app's imports too): {first_sum:.2f} s"
    )
    print(f"\nmedian of {args.rounds} requests each:")
    medians = {name: median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"  {name:<26} {value * 1000:8.1f} ms")
    base = medians["REST task-instances list"]
    for name in ("conflicts page", "conflicts page, 30 days", "conflicts, 1 table+DAG"):
        print(f"{name + ' / REST task-instances list:':<50} {medians[name] / base:.2f}x")
    tries = medians["REST one task's tries"]
    label = "task view / REST one task's tries:"
    print(f"{label:<50} {medians['task view'] / tries:.2f}x")
    print(f"\nplan of the default page's totals:\n{plan}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
