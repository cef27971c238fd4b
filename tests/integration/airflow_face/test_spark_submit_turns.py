"""A spark-submit driver's retries take their turn: after a lost conflict, the commit loop in the driver asks
the worker, which holds the writer's lease, and waits for the writer ahead of it instead of backing off.

A real ``dag.test()`` run of a MERGE pinned to one partition, in ``spark_submit`` mode on a ``local[1]``
master. Before it, a blind append into the table holds its write lease: the pair *can* conflict, so the
MERGE's first turn does not wait for it. The driver's first attempt is held after Delta took its snapshot
(:mod:`tests.support.submit_hold`) while the test commits that append, so the attempt loses a real
ConcurrentAppendException; the append's lease is released a few seconds after the driver asked for its
turn. The driver's retry waited for that release (its ``turn_wait_s``) and started at once, without a backoff.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases import LeaseRequest, SqliteLeaseStore
from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.turns import LeaseTurns
from tests.support.airflow_runs import serialize_dag, xcom_value
from tests.support.submit_hold import rival_during_submit

pytestmark = pytest.mark.integration

CONN_ID = "deltacc_turns_local"
DAY = "2026-11-20"
#: How long the append holds its lease after its commit: the driver's retry waits about this long.
HOLD_S = 3.0


def test_a_driver_retry_waits_for_the_writer_ahead_through_the_worker(
    airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    from airflow.sdk import DAG
    from deltalake import DeltaTable, write_deltalake

    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    table = str(tmp_path / "orders")
    schema = pa.schema([("id", pa.int64()), ("date", pa.string()), ("v", pa.string())])
    write_deltalake(
        table, pa.table({"id": [1], "date": [DAY], "v": ["seed"]}, schema=schema), partition_by=["date"]
    )
    store_path = tmp_path / "leases.db"
    with SqliteLeaseStore(store_path) as store:
        appender = store.try_acquire(
            LeaseRequest(table, "ingest.append_orders", OpKind.BLIND_APPEND, None, ttl_s=600),
            lambda _l: False,
        ).lease
    assert appender is not None

    # dag.test() runs the task in this process: the worker's turn queue is the class below. The append's
    # lease is released HOLD_S after the driver's retry asked for its turn, so the retry waited that long.
    retry_asked = threading.Event()
    real_retry = LeaseTurns.retry

    def watched_retry(self: LeaseTurns, conflict_kind: str, attempt: int) -> float | None:
        retry_asked.set()
        return real_retry(self, conflict_kind, attempt)

    monkeypatch.setattr(LeaseTurns, "retry", watched_retry)

    def release_once_the_driver_asks() -> None:
        if retry_asked.wait(120):
            time.sleep(HOLD_S)
        with SqliteLeaseStore(store_path) as later:
            later.release(appender.lease_id)

    releaser = threading.Thread(target=release_once_the_driver_asks, daemon=True)
    releaser.start()

    def append() -> None:
        rows = pa.table({"id": [7], "date": [DAY], "v": ["appended"]}, schema=schema)
        write_deltalake(table, rows, mode="append")

    with DAG("deltacc_test_submit_turns", schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        DeltaMergeOperator(
            task_id="merge_day",
            table=table,
            source={
                "kind": "rows",
                "rows": [[1, DAY, "merged"]],
                "schema": "id BIGINT, date STRING, v STRING",
            },
            keys=["id", "date"],
            execution_mode="spark_submit",
            conn_id=CONN_ID,
            lease_store_url=f"sqlite:///{store_path}",
            commit_retry={"max_attempts": 3, "min_wait_s": 20.0, "max_wait_s": 20.0},
            retries=0,
        )
    serialize_dag(dag, tmp_path / "no-dags")
    with rival_during_submit(tmp_path, monkeypatch, append, gate_column="id"):
        dr = dag.test()
    releaser.join(timeout=60)

    assert str(dr.state) == "success"
    report = xcom_value(dr, "merge_day", REPORT_XCOM_KEY)
    first, second = report["attempts"]
    assert first["conflict"]["kind"] == "append", first
    # The driver waited for the append's lease through the worker, then retried at once: no 20 s backoff.
    assert HOLD_S - 1.0 <= first["turn_wait_s"] < HOLD_S + 15, first
    assert first["wait_s"] == 0.0 and second["outcome"] == "committed", report
    rows = DeltaTable(table).to_pyarrow_table().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "date": DAY, "v": "merged"}, {"id": 7, "date": DAY, "v": "appended"}]
