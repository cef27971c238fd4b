"""A one-task DAG that appends one row to a seeded, partitioned ``events`` table through spark-submit, run
with ``dag.test()``: shared by the tests of how a spark_submit task learns its outcome."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.support.airflow_runs import serialize_dag, task_log_lines

if TYPE_CHECKING:
    import pytest

TASK_ID = "append_one_row"
SCHEMA = "id INT, p STRING, v STRING"
#: The rows :func:`seed_events_table` writes, and the one the task appends.
SEEDED = [(1, "a", "old"), (2, "b", "old")]
APPENDED = (7, "a", "new")


def seed_events_table(table: str) -> str:
    """Write :data:`SEEDED` to a new table partitioned by ``p`` with delta-rs (version 0).

    :param table: the table's path.
    """
    import pyarrow as pa
    from deltalake import write_deltalake

    seed = {"id": pa.array([1, 2], pa.int32()), "p": ["a", "b"], "v": ["old", "old"]}
    write_deltalake(table, pa.table(seed), partition_by=["p"])
    return table


def append_one_row(
    dag_id: str,
    table: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    **operator_kwargs: Any,
) -> tuple[Any, str]:
    """Run the DAG; return the DAG run and the task's log.

    :param operator_kwargs: for ``DeltaAppendOperator`` (``conn_id`` at least).
    """
    from airflow.sdk import DAG

    from airflow_provider_deltacc.operators import DeltaAppendOperator

    with DAG(dag_id, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        DeltaAppendOperator(
            task_id=TASK_ID,
            table=table,
            source={"kind": "rows", "rows": [list(APPENDED)], "schema": SCHEMA},
            execution_mode="spark_submit",
            retries=0,
            **operator_kwargs,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    caplog.set_level(logging.INFO)
    caplog.clear()
    capfd.readouterr()
    dr = dag.test()
    return dr, "\n".join(task_log_lines(capfd.readouterr().out, caplog.records))


def table_rows(table: str) -> list[tuple[Any, ...]]:
    """The table's rows, sorted, read with delta-rs."""
    from deltalake import DeltaTable

    return sorted((r["id"], r["p"], r["v"]) for r in DeltaTable(table).to_pyarrow_table().to_pylist())
