"""Chaos through Airflow: mapped transfer tasks in a real Airflow stack, task processes killed mid-MERGE and
after their commit, the scheduler killed and restarted, the lease store's PostgreSQL stopped for a while
(see :mod:`tests.chaos.airflow_workload`); exactly once checked with delta-rs and the Delta log."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.airflow_workload import AirflowChaosConfig, run_airflow_chaos
from tests.support.postgres import PostgresServer, scratch_database, throwaway_postgres
from tests.support.spark_connect import ConnectServer

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.slow_module(2.5)]

BOUNDED = AirflowChaosConfig()


@pytest.fixture
def lease_server() -> Iterator[tuple[PostgresServer, str]]:
    """A PostgreSQL server of its own for the lease store: the run stops it, Airflow's must stay up."""
    with throwaway_postgres() as server_and_url:
        yield server_and_url


@pytest.mark.timeout(1500)
def test_transfers_survive_killed_tasks_scheduler_and_lease_store_exactly_once(
    spark_connect_server: ConnectServer,
    postgres_url: str,
    lease_server: tuple[PostgresServer, str],
    tmp_path: Path,
) -> None:
    server, lease_url = lease_server
    with scratch_database(postgres_url, "airflow") as metadata_url:
        result = run_airflow_chaos(
            tmp_path,
            BOUNDED,
            metadata_url=metadata_url,
            connect_uri=spark_connect_server.conn_uri,
            lease_server=server,
            lease_url=lease_url,
        )
    report = "\n".join(result.lines())
    print(report)

    assert result.violations == [], report
    assert (result.committed, result.lost, result.duplicated) == (BOUNDED.transfers, [], []), report
    assert result.faults == Counter(
        {
            "task_mid_merge": BOUNDED.mid_merge_kills,
            "task_after_commit": BOUNDED.after_commit_kills,
            "scheduler_restart": BOUNDED.scheduler_restarts,
            "lease_store_stop": BOUNDED.lease_store_stops,
        }
    ), report
    # A task killed after its commit is retried by Airflow, and the retry finds its commit in the log.
    assert result.skipped_duplicates >= BOUNDED.after_commit_kills, report
    assert sum(n for tries, n in result.tries.items() if tries >= 2) >= BOUNDED.mid_merge_kills + (
        BOUNDED.after_commit_kills
    ), report
