"""Bad input and faults on S3, each decided the way Airflow should act on it, with nothing written:
a bucket that does not exist and refused credentials are bad input (no retry), naming ``table`` or
``aws_conn_id``; an S3 endpoint that does not answer is infrastructure (Airflow retries the task). A busy
store (``503 SlowDown`` on a share of the requests, slow listings) loses and duplicates nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.operators.write_base import DeltaWriteOperator
from tests.support.s3_proxy import OutageAfterCommit, Throttling, s3_proxy
from tests.support.s3_server import SECRET_KEY, S3Server
from tests.support.spark_standalone import _free_port
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

ROWS = {"kind": "rows", "rows": [[1, "a"]], "schema": "id INT, p STRING"}
#: S3A gives up on an endpoint that refuses connections after its first try, instead of minutes of retries.
FAIL_FAST = {
    "fs.s3a.retry.limit": "0",
    "fs.s3a.attempts.maximum": "0",
    "fs.s3a.connection.establish.timeout": "2s",
}


def _append(table: str, aws_conn_id: str, tmp_path: Path, **kwargs: Any) -> DeltaAppendOperator:
    return DeltaAppendOperator(
        task_id="append_s3",
        table=table,
        source=ROWS,
        create_if_missing=True,
        execution_mode="in_process",
        aws_conn_id=aws_conn_id,
        lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
        **kwargs,
    )


@pytest.fixture
def checking_s3(tmp_path: Path) -> Iterator[S3Server]:
    """A second S3 server that checks credentials (moto with IAM authentication on): every key is unknown."""
    server = S3Server(
        port=_free_port(), log=tmp_path / "moto-auth.log", env={"INITIAL_NO_AUTH_ACTION_COUNT": "0"}
    )
    server.start()
    try:
        yield server
    finally:
        server.halt()


def test_a_bucket_that_does_not_exist_is_bad_input_naming_the_table(
    spark: SparkSession, s3_server: S3Server, aws_conn_id: str, tmp_path: Path
) -> None:
    table = "s3a://deltacc-no-such-bucket-7f3a/orders"
    with pytest.raises(DeltaCCInputError) as raised:
        _append(table, aws_conn_id, tmp_path).execute(make_context(task_id="append_s3"))
    assert raised.value.field == "table" and raised.value.value == table
    assert "bucket 'deltacc-no-such-bucket-7f3a' does not exist" in str(raised.value)
    buckets = [b["Name"] for b in s3_server.client().list_buckets()["Buckets"]]
    assert "deltacc-no-such-bucket-7f3a" not in buckets


def test_refused_credentials_are_bad_input_naming_aws_conn_id(
    spark: SparkSession, checking_s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_REFUSED", checking_s3.connection_uri())
    with pytest.raises(DeltaCCInputError) as raised:
        _append("s3a://refused/orders", "deltacc_s3_refused", tmp_path).execute(
            make_context(task_id="append_s3")
        )
    assert (raised.value.field, raised.value.value) == ("aws_conn_id", "deltacc_s3_refused")
    assert "aws_conn_id='deltacc_s3_refused': S3 refused the credentials for bucket 'refused'" in str(
        raised.value
    )
    assert SECRET_KEY not in str(raised.value) + json.dumps(raised.value.report, default=str)


def test_an_s3_endpoint_that_does_not_answer_is_infrastructure(
    spark: SparkSession, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    down = json.loads(s3_server.connection_uri())
    down["extra"]["endpoint_url"] = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_DOWN", json.dumps(down))
    op = _append("s3a://down/orders", "deltacc_s3_down", tmp_path, spark_conf=FAIL_FAST)
    with pytest.raises(DeltaCCInfrastructureError) as raised:
        op.execute(make_context(task_id="append_s3"))
    assert raised.value.unreachable == "the S3 endpoint of bucket 'down'"


def test_the_store_going_down_after_the_commit_landed_is_retried_without_a_duplicate(
    spark: SparkSession, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worst moment: the commit file is written, then the store answers nothing more. The try fails as
    infrastructure; Airflow's retry finds the commit in the log by its txn identity and writes nothing."""
    bucket = s3_server.new_bucket("outage")
    table = f"s3a://{bucket}/orders"
    outage = OutageAfterCommit(f"{bucket}/orders/_delta_log/{1:020d}.json")
    with s3_proxy(s3_server.port, outage) as endpoint:
        proxied = json.loads(s3_server.connection_uri())
        proxied["extra"]["endpoint_url"] = endpoint
        monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_OUTAGE", json.dumps(proxied))

        def write() -> DeltaAppendOperator:
            # The first task on a bucket fixes its S3A settings for the JVM (Hadoop caches one filesystem per
            # bucket), so every task here fails fast.
            return _append(table, "deltacc_s3_outage", tmp_path, spark_conf=FAIL_FAST)

        assert write().execute(make_context(task_id="create"))["status"] == "committed"

        with pytest.raises(DeltaCCInfrastructureError) as raised:
            write().execute(make_context(task_id="append_s3", try_number=1))
        assert outage.landed == [200], "the commit never reached the store"
        assert raised.value.unreachable == f"the S3 endpoint of bucket {bucket!r}"

        outage.end()  # the store is back; Airflow runs the next try
        retried = write().execute(make_context(task_id="append_s3", try_number=2))
    assert retried["status"] == "skipped_duplicate", retried
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.version() == 1
    assert sorted(r["id"] for r in delta.to_pyarrow_table().to_pylist()) == [1, 1]  # create's row + the write
    txns = [t for c in s3_server.log_commits(table) for t in c["txn"]]
    assert len(txns) == 2 and len({(t["appId"], t["version"]) for t in txns}) == 2


def _run_as_airflow_would(op: DeltaWriteOperator, tries: int = 3) -> tuple[dict[str, Any], list[str]]:
    """Run the task's tries until one succeeds, as Airflow's retries would after an infrastructure failure;
    returns the last report and each failed try's error."""
    failed: list[str] = []
    for try_number in range(1, tries + 1):
        try:
            return op.execute(make_context(task_id=op.task_id, try_number=try_number)), failed
        except DeltaCCInfrastructureError as exc:
            failed.append(str(exc))
    raise AssertionError(f"{op.task_id}: every try failed: {failed}")


def test_a_throttling_store_with_slow_listings_loses_and_duplicates_nothing(
    spark: SparkSession, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request in four of each kind answered ``503 SlowDown`` (listings of ``_delta_log``, commit uploads,
    reads of the log and data; the first of each kind included) and every listing answered late: each write
    commits once, on its first try or, failed as infrastructure, on a retry that finds nothing to write
    twice. (Delta lists ``_delta_log`` about 24 times per write here, so the listings' delay is short.)"""
    bucket = s3_server.new_bucket("busy")
    table = f"s3a://{bucket}/orders"
    busy = Throttling(every=4, listing_delay_s=0.25)
    with s3_proxy(s3_server.port, busy) as endpoint:
        proxied = json.loads(s3_server.connection_uri())
        proxied["extra"]["endpoint_url"] = endpoint
        monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_BUSY", json.dumps(proxied))
        runs = {
            "create": _run_as_airflow_would(_append(table, "deltacc_s3_busy", tmp_path)),
            "append": _run_as_airflow_would(
                DeltaAppendOperator(
                    task_id="append",
                    table=table,
                    source={"kind": "rows", "rows": [[2, "a"]], "schema": "id INT, p STRING"},
                    execution_mode="in_process",
                    aws_conn_id="deltacc_s3_busy",
                    lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
                )
            ),
            "merge": _run_as_airflow_would(
                DeltaMergeOperator(
                    task_id="merge",
                    table=table,
                    source={"kind": "rows", "rows": [[1, "b"], [3, "a"]], "schema": "id INT, p STRING"},
                    keys=["id"],
                    partition_pin=None,
                    execution_mode="in_process",
                    aws_conn_id="deltacc_s3_busy",
                    lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
                )
            ),
        }
    # The store was busy where it hurts: listings of the log and commit uploads were refused.
    assert busy.refused["listing"] >= 1 and busy.refused["commit"] >= 1, busy.refused
    for task, (report, failed) in runs.items():
        assert report["status"] in {"committed", "skipped_duplicate"}, (task, report, failed)
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert sorted((r["id"], r["p"]) for r in delta.to_pyarrow_table().to_pylist()) == [
        (1, "b"),
        (2, "a"),
        (3, "a"),
    ]
    commits = s3_server.log_commits(table)
    assert len(commits) == 3, [c["commitInfo"] for c in commits]  # create, append, merge: once each
    txns = [(t["appId"], t["version"]) for c in commits for t in c["txn"]]
    assert len(txns) == 3 and len(set(txns)) == 3, txns


def test_a_missing_aws_connection_is_bad_input_and_nothing_is_written(
    spark: SparkSession, s3_server: S3Server, tmp_path: Path
) -> None:
    table = f"s3a://{s3_server.new_bucket()}/orders"
    op = DeltaAppendOperator(
        task_id="no_conn",
        table=table,
        source=ROWS,
        create_if_missing=True,
        execution_mode="in_process",
        aws_conn_id="no_such_aws_conn",
        lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
    )
    with pytest.raises(DeltaCCInputError) as raised:
        op.execute(make_context(task_id="no_conn"))
    assert raised.value.field == "aws_conn_id" and "no_such_aws_conn" in str(raised.value)
    assert "Contents" not in s3_server.client().list_objects_v2(Bucket=table.split("/")[2])
    assert SECRET_KEY not in str(raised.value)
