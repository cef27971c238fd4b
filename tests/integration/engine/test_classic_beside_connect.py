"""A classic job in one thread while a Spark Connect operation in another holds pyspark's process-wide
Connect mark (the library API beside a classic session, operators run side by side in threads): the job
finds the running classic session (pyspark's own ``getActiveSession()`` and builder would look for a
Connect one, and refuse to build a session beside the running SparkContext) and commits."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.spark_jars.connect_mode import spark_connect_code
from airflow_provider_deltacc.spark_job.main import run_job
from tests.integration.engine.helpers import SCHEMA, create_table, rows_source

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.classic_session]

SEED = [(1, "2026-11-20", "a")]


@pytest.mark.parametrize("operation", ["append", "merge"])
def test_a_classic_job_commits_while_another_thread_holds_the_connect_mark(
    spark: SparkSession, tmp_path: Path, operation: str
) -> None:
    from deltalake import DeltaTable
    from pyspark.sql import is_remote

    table = str(tmp_path / "t")
    create_table(spark, table, SEED, SCHEMA)
    spec: dict[str, Any] = {
        "operation": operation,
        "table": table,
        "source": rows_source([[2, "2026-11-20", "b"]]),
    }
    if operation == "merge":
        spec["options"] = {"keys": ["id"], "partition_pin": None}
    outcome: list[tuple[int, dict[str, Any]]] = []
    with spark_connect_code():  # as a Connect operation in another thread holds it
        assert is_remote()
        job = threading.Thread(target=lambda: outcome.append(run_job(spec)), name="classic-job")
        job.start()
        job.join(180)
    [(code, report)] = outcome
    assert code == ExitCode.SUCCESS and report["status"] == "committed", report
    rows = sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda row: row["id"])
    assert [row["id"] for row in rows] == [1, 2]
