"""A lapsed lease stops its writer, where the lease is what keeps the data safe: a writer of an S3 table
serialized by its exclusive lease (Delta's own S3 log store: the provider's put-if-absent one turned off) is
held before its commit while the PostgreSQL lease store is stopped past the lease's TTL. The attempt is
abandoned before it commits, the try fails as infrastructure (Airflow retries it), and the retry, with the
store back, commits once: in this process, and in a spark-submit driver of its own, which checks the lease
through its worker."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError
from airflow_provider_deltacc.leases import store_from_url
from airflow_provider_deltacc.operators import DeltaAppendOperator
from airflow_provider_deltacc.spark_jars.put_if_absent import SWITCH_CONF
from tests.support.postgres import PostgresServer
from tests.support.s3_server import S3Server
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

TTL_S = 4.0
SCHEMA = "writer STRING, n INT"


def _held_source(gate: Path) -> Callable[[SparkSession], DataFrame]:
    """A source function that notes each call and holds the first one until the test releases it (files,
    so that it works in a spark-submit driver as well as in this process)."""
    calls, entered, released = str(gate / "calls"), str(gate / "entered"), str(gate / "released")

    def source(spark: SparkSession) -> DataFrame:
        import os
        import time

        with open(calls, "a") as noted:
            noted.write("call\n")
        # The first try: held here, after its lease was taken, before its commit.
        if not os.path.exists(entered):
            open(entered, "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(released) and time.monotonic() < deadline:
                time.sleep(0.1)
        return spark.createDataFrame([("writer", 1)], "writer STRING, n INT")

    return source


@pytest.mark.parametrize("mode", ["in_process", "spark_submit"])
def test_a_writer_whose_exclusive_lease_lapsed_before_its_commit_commits_nothing_and_the_retry_commits_once(
    spark: SparkSession,
    s3_server: S3Server,
    aws_conn_id: str,
    stoppable_postgres: tuple[PostgresServer, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    """In ``spark_submit`` mode the commit loop runs in a driver of its own (client deploy mode), which
    checks the worker's lease through the worker before its write commits."""
    store, store_url = stoppable_postgres
    table = f"s3a://{s3_server.new_bucket('lapse')}/t"
    gate = tmp_path / "gate"
    gate.mkdir()
    source = _held_source(gate)
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_LAPSE_SUBMIT", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    submit: dict[str, Any] = (
        {"conn_id": "deltacc_lapse_submit", "driver_python": sys.executable} if mode == "spark_submit" else {}
    )

    def writer() -> DeltaAppendOperator:
        return DeltaAppendOperator(
            task_id="append",
            table=table,
            source=source,
            aws_conn_id=aws_conn_id,
            execution_mode=mode,
            lease_store_url=store_url,
            lease_ttl=TTL_S,
            spark_conf={SWITCH_CONF: "false"},
            txn_app_id="lapse-test",
            txn_version=1,
            **submit,
        )

    create = DeltaAppendOperator(
        task_id="create",
        table=table,
        source={"kind": "rows", "rows": [["setup", 0]], "schema": SCHEMA},
        aws_conn_id=aws_conn_id,
        execution_mode="in_process",
        lease_store_url=store_url,
        spark_conf={SWITCH_CONF: "false"},
    )
    assert create.execute(make_context(task_id="create"))["status"] == "committed"

    outcome: list[Any] = []

    def first_try() -> None:
        try:
            outcome.append(writer().execute(make_context(task_id="append")))
        except BaseException as exc:  # asserted below
            outcome.append(exc)

    thread = threading.Thread(target=first_try, name="first-try")
    thread.start()
    deadline = time.monotonic() + 180
    while not (gate / "entered").exists():
        assert thread.is_alive() and time.monotonic() < deadline, (
            f"the writer never reached its source: {outcome}"
        )
        time.sleep(0.1)
    store.halt()  # the lease store goes away while the writer holds the table
    time.sleep(TTL_S + 1.0)  # past the lease's TTL: the store may let the next writer in now
    (gate / "released").touch()
    thread.join(180)
    [error] = outcome
    assert isinstance(error, DeltaCCInfrastructureError), error
    message = str(error)
    assert table.replace("s3a://", "s3://") in message or table in message, message
    assert "lapsed" in message and f"TTL {TTL_S:.0f} s" in message and "BLIND_APPEND lease" in message, (
        message
    )
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.version() == 0  # nothing was committed by the writer whose lease lapsed

    store.start()  # Airflow's retry, with the store back
    report = writer().execute(make_context(task_id="append", try_number=2))
    assert report["status"] == "committed" and report["storage_safety"]["guard"] == "exclusive_lease"
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.version() == 1
    assert sorted(r["writer"] for r in delta.to_pyarrow_table().to_pylist()) == ["setup", "writer"]
    assert (gate / "calls").read_text().count("call") == 2
    with store_from_url(store_url) as leases:
        holders = [lease.op_kind.name for lease in leases.history(table)]
    assert holders.count("BLIND_APPEND") == 3  # create, the lapsed try, the retry
