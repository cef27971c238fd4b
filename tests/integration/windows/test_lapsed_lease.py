"""A lapsed lease stops its writer, where the lease is what keeps the data safe: a writer of an S3 table
serialized by its exclusive lease (Delta's own S3 log store: the provider's put-if-absent one turned off) is
held before its commit while the PostgreSQL lease store is stopped past the lease's TTL. The attempt is
abandoned before it commits, the try fails as infrastructure (Airflow retries it), and the retry, with the
store back, commits once."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError
from airflow_provider_deltacc.operators import DeltaAppendOperator
from airflow_provider_deltacc.spark_jars.put_if_absent import SWITCH_CONF
from airflow_provider_deltacc.windows import store_from_url
from tests.support.postgres import PostgresServer
from tests.support.s3_server import S3Server
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.integration

TTL_S = 4.0
SCHEMA = "writer STRING, n INT"


def test_a_writer_whose_exclusive_lease_lapsed_before_its_commit_commits_nothing_and_the_retry_commits_once(
    spark: SparkSession,
    s3_server: S3Server,
    aws_conn_id: str,
    stoppable_postgres: tuple[PostgresServer, str],
) -> None:
    store, store_url = stoppable_postgres
    table = f"s3a://{s3_server.new_bucket('lapse')}/t"
    held, go = threading.Event(), threading.Event()
    calls: list[int] = []

    def source(spark: SparkSession) -> DataFrame:
        calls.append(1)
        if len(calls) == 1:  # the first try: held here, after its lease was taken, before its commit
            held.set()
            assert go.wait(120), "the test never let the writer go on"
        return spark.createDataFrame([("writer", 1)], SCHEMA)

    def writer() -> DeltaAppendOperator:
        return DeltaAppendOperator(
            task_id="append",
            table=table,
            source=source,
            aws_conn_id=aws_conn_id,
            execution_mode="in_process",
            lease_store_url=store_url,
            lease_ttl=TTL_S,
            spark_conf={SWITCH_CONF: "false"},
            txn_app_id="lapse-test",
            txn_version=1,
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
    assert held.wait(120), f"the writer never reached its source: {outcome}"
    store.halt()  # the lease store goes away while the writer holds the table
    time.sleep(TTL_S + 1.0)  # past the lease's TTL: the store may let the next writer in now
    go.set()
    thread.join(120)
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
    assert len(calls) == 2
    with store_from_url(store_url) as leases:
        holders = [lease.op_kind.name for lease in leases.history(table)]
    assert holders.count("BLIND_APPEND") == 3  # create, the lapsed try, the retry
