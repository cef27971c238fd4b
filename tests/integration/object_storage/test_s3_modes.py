"""Maintenance and every JVM-free reader on S3 (the writers of every mode are in test_s3_commit_race.py):
OPTIMIZE and VACUUM run there behind the gate, which reads the table's facts from S3 through the
``aws_conn_id`` connection; the table sensor and its trigger read the S3 log, the trigger knowing only the
connection's name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaOptimizeOperator,
    DeltaVacuumOperator,
)
from airflow_provider_deltacc.sensors import DeltaTableVersionSensor
from airflow_provider_deltacc.triggers.table_version import DeltaTableTrigger
from tests.support.s3_server import SECRET_KEY, S3Server
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


pytestmark = pytest.mark.integration

ROWS = {"kind": "rows", "rows": [[1, "a"], [2, "b"]], "schema": "id INT, p STRING"}


def _delta(s3: S3Server, table: str) -> DeltaTable:
    return DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3.storage_options())


def test_maintenance_sensor_and_trigger_read_s3_through_the_connection(
    spark: SparkSession, s3_server: S3Server, aws_conn_id: str, tmp_path: Path
) -> None:
    table = f"s3a://{s3_server.new_bucket()}/events"
    store_url = f"sqlite:///{tmp_path / 'leases.db'}"
    common: dict[str, Any] = {
        "table": table,
        "execution_mode": "in_process",
        "aws_conn_id": aws_conn_id,
        "lease_store_url": store_url,
    }
    for day in ("a", "b", "c"):  # three small files in one partition
        rows = {"kind": "rows", "rows": [[ord(day), "p1"]], "schema": "id INT, p STRING"}
        op = DeltaAppendOperator(
            task_id=f"append_{day}", source=rows, create_if_missing=True, partition_by=["p"], **common
        )
        assert op.execute(make_context(task_id=f"append_{day}"))["status"] == "committed"

    sensor = DeltaTableVersionSensor(
        task_id="wait_s3", table=table, after_version=1, operation="WRITE", aws_conn_id=aws_conn_id
    )
    assert sensor.poke(make_context(task_id="wait_s3")).is_done is True
    trigger = DeltaTableTrigger(
        table=table.replace("s3a://", "s3://"),
        condition={"after_version": 1, "operation": None, "partition": {}},
        poll_interval=0.1,
        aws_conn_id=aws_conn_id,
    )
    assert SECRET_KEY not in json.dumps(trigger.serialize())

    async def first_event() -> Any:
        return await anext(trigger.run())

    event = asyncio.run(first_event())
    assert event.payload["status"] == "success", event.payload
    assert event.payload["match"]["version"] == 2

    # OPTIMIZE learns from S3 that the table is partitioned (table facts), passes the gate, compacts.
    optimize = DeltaOptimizeOperator(task_id="optimize", deferrable=False, poll_interval=0.2, **common)
    assert optimize.delta_rs_options is not None
    report = optimize.execute(make_context(task_id="optimize"))
    assert report["status"] == "committed", report
    delta = _delta(s3_server, table)
    assert delta.history(1)[0]["operation"] == "OPTIMIZE"
    assert len(delta.file_uris()) == 1 and delta.metadata().partition_columns == ["p"]

    vacuum = DeltaVacuumOperator(
        task_id="vacuum",
        retention_hours=0,
        force=True,
        deferrable=False,
        poll_interval=0.2,
        **common,
    )
    assert vacuum.execute(make_context(task_id="vacuum"))["status"] == "committed"
    listed = s3_server.client().list_objects_v2(Bucket=table.split("/")[2], Prefix="events/p=p1/")
    data_files = [o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith(".parquet")]
    assert len(data_files) == 1, data_files  # the three compacted files are gone
