"""The topology test's data: one partitioned table, its seed, the writers' sources and the rows they leave.

Imported by the test and by its DAG files (``dags/``), which the Airflow stack parses and runs with the
repository on ``PYTHONPATH``. The table's path comes from :data:`TABLE_ENV`; the directory where one MERGE's
first try holds its write (:class:`HeldMergeOperator`) from :data:`HOLD_ENV`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.operators import DeltaMergeOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

#: The environment variable with the table's path, set in the stack's environment.
TABLE_ENV = "DELTACC_TOPOLOGY_TABLE"
#: The environment variable with the directory of the held MERGE's gate.
HOLD_ENV = "DELTACC_TOPOLOGY_HOLD"
WRITERS_DAG = "topology_writers"
MAINTENANCE_DAG = "topology_maintenance"
PYSPARK_DAG = "topology_pyspark"

#: The decorated writers' execution modes and the amounts each mode's mapped tasks add to one balance (a
#: spark_submit task starts a driver JVM of its own: one is enough to race the Connect tasks). in_process
#: writers race in tests/integration/engine/test_source_functions.py, in one JVM as its tasks would.
PYSPARK_AMOUNTS = {"spark_connect": (1, 10, 100), "spark_submit": (1000,)}
BALANCE_SCHEMA = "account STRING, balance BIGINT"

SCHEMA = "id BIGINT, part STRING, writer STRING, status STRING"
PARTS = ("p0", "p1", "p2")
#: Mapped appends: each adds one row to every partition. Blind appends never conflict with each other.
APPENDS = 3
#: Mapped MERGEs, two per partition and pinned to it (``part`` is a key): each updates half of its
#: partition's seed rows and inserts new ones. Appends into its partition, and the other MERGE of its
#: partition, that commit while it runs make it retry.
MERGES = 2 * len(PARTS)
SEED_ROWS_PER_PART = 4
MERGE_INSERTS_PER_PART = 2
#: Airflow retries of every task: a task on a host that is lost is retried on another.
RETRIES = 3
#: The tasks' lease TTL: a lost host's leases expire this long after their last heartbeat.
LEASE_TTL_S = 20.0
#: The MERGE whose first try holds its write on the cluster until the test takes its host down.
HELD_MERGE = 0
#: The held MERGE's source is spread over this many tasks, one per Spark worker (each offers one core), so
#: that the executor on every host is mid-stage in it when the test takes a host down.
HELD_TASKS = 2


def table_path() -> str:
    return os.environ[TABLE_ENV]


def balances_path() -> str:
    """The decorated writers' table, beside the writers' one."""
    return balances_path_for(table_path())


def balances_path_for(table: str) -> str:
    return f"{table}_balances"


def _row(row_id: int, part: str, writer: str, status: str) -> dict[str, Any]:
    return {"id": row_id, "part": part, "writer": writer, "status": status}


def seed_rows() -> list[dict[str, Any]]:
    return [
        _row(1000 + 10 * p + k, part, "seed", "seed")
        for p, part in enumerate(PARTS)
        for k in range(SEED_ROWS_PER_PART)
    ]


def append_rows(index: int) -> list[dict[str, Any]]:
    return [_row(100 * (index + 1) + p, part, f"append-{index}", "new") for p, part in enumerate(PARTS)]


def merge_rows(index: int) -> list[dict[str, Any]]:
    """MERGE ``index``'s source: its half of its partition's seed rows, updated, and new rows."""
    part, half = PARTS[index % len(PARTS)], index // len(PARTS)
    seeds = [r for r in seed_rows() if r["part"] == part]
    updates = [_row(r["id"], part, f"merge-{index}", "merged") for k, r in enumerate(seeds) if k % 2 == half]
    inserts = [
        _row(2000 + 10 * index + k, part, f"merge-{index}", "merged") for k in range(MERGE_INSERTS_PER_PART)
    ]
    return updates + inserts


def inline(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """An inline-rows source for an operator."""
    return {"kind": "rows", "rows": rows, "schema": SCHEMA}


def expected_rows() -> list[dict[str, Any]]:
    """The table after every writer committed exactly once, in any order, sorted by id."""
    rows = {r["id"]: r for r in seed_rows()}
    for index in range(APPENDS):
        rows.update({r["id"]: r for r in append_rows(index)})
    for index in range(MERGES):
        rows.update({r["id"]: r for r in merge_rows(index)})
    return sorted(rows.values(), key=lambda r: r["id"])


class HeldMergeOperator(DeltaMergeOperator):
    """A MERGE whose mapped task :data:`HELD_MERGE` holds its write on its first try: the Spark job of its
    first attempt blocks on the cluster (its snapshot read, nothing committed) at a gate in the directory of
    :data:`HOLD_ENV`, in a stage of :data:`HELD_TASKS` tasks, one on each Spark worker, until the test has
    killed the task's host and opens the gate. The orphaned MERGE may then still commit; the retry, on
    another host, must find it in the log."""

    def execute(self, context: Context) -> Any:
        if context["ti"].map_index == HELD_MERGE and context["ti"].try_number == 1:
            from tests.chaos.airflow_faults import hold_first_attempt

            hold_first_attempt(Path(os.environ[HOLD_ENV]), column="id", tasks=HELD_TASKS)
        return super().execute(context)
