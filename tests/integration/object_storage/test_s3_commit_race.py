"""The multi-driver hazard on S3, run: two Spark drivers commit the same table version at the same moment. A
proxy in front of the S3 API server holds the first commit upload until the second arrives, so the race
happens every time.

With Delta's own S3 log store (S3SingleDriverLogStore, which excludes writers inside one JVM only) one
commit is lost, with the locked versions (delta-spark 4.4, hadoop-aws 3.5.0): both uploads succeed, the
second overwrites the first, and both drivers reported success. Hadoop 3.5's S3A conditional create
(``fs.s3a.create.conditional.enabled``, on by default) does not close it: it applies only to files created
through the ``createFile()`` builder with the conditional-overwrite option, while that log store calls
``create(path, overwrite=false)``, whose upload carries no ``If-None-Match``.

The provider's put-if-absent log store (the default S3 log store of every Spark it starts) creates commit
files with that option: the second upload of the version fails with 412, that driver's Delta retries at the
next version, and both commits land, with no lease serializing the drivers. Through the operators, four
writers of three drivers (this JVM, a spark-submit driver, the Spark Connect server) and a delta-rs writer
race on one table the same way and lose nothing.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from airflow_provider_deltacc.contract.storage_safety import PUT_IF_ABSENT_LOG_STORE
from airflow_provider_deltacc.engine.confs import isolated_session
from airflow_provider_deltacc.leases import store_from_url
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.spark_jars.put_if_absent import SWITCH_CONF
from tests.integration.object_storage.side_by_side import run_side_by_side, statuses
from tests.support.s3_proxy import CommitBarrier, s3_proxy
from tests.support.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Server
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.spark_connect import ConnectServer

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2)]

DRIVER = textwrap.dedent(
    """
    import json, sys
    from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

    plan = json.loads(sys.argv[1])
    spark = local_delta_session(app_name=plan["writer"], master="local[1]", extra_conf=plan["conf"])
    print("log store:", spark.sparkContext.getConf().get("spark.delta.logStore.s3a.impl", "Delta's default"))
    spark.createDataFrame([(plan["writer"], plan["n"])], "writer STRING, n INT").write.format("delta").mode(
        "append"
    ).save(plan["table"])
    spark.stop()
    """
)
SCHEMA = "writer STRING, n INT"
PARTITIONED_SCHEMA = "writer STRING, n INT, p STRING"
#: What a MERGE that read a partition another writer committed to meanwhile may lose on, and retry.
RETRYABLE_KINDS = {"append", "delete_read", "concurrent_transaction"}


def _driver(table: str, conf: dict[str, str], writer: str, n: int) -> subprocess.Popen[str]:
    """A Spark driver of its own (a new JVM) that appends one row to ``table``."""
    plan = {"table": table, "conf": conf, "writer": writer, "n": n}
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(plan)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finished(driver: subprocess.Popen[str]) -> str:
    output, _ = driver.communicate(timeout=300)
    failures = [line for line in output.splitlines() if "Exception" in line]
    assert driver.returncode == 0, "\n".join(failures)[:3000]
    return output


def _s3a_conf(endpoint: str) -> dict[str, str]:
    return {
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": REGION,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
    }


def _writers(s3: S3Server, table: str) -> list[str]:
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3.storage_options())
    return sorted(row["writer"] for row in delta.to_pyarrow_table().to_pylist())


def test_two_drivers_racing_one_commit_lose_one_with_the_default_s3_log_store(
    spark: SparkSession, s3_server: S3Server
) -> None:
    """Both drivers with Delta's own S3 log store (the provider's turned off): one commit is lost."""
    bucket = s3_server.new_bucket("race")
    table = f"s3a://{bucket}/t"
    barrier = CommitBarrier(f"{bucket}/t/_delta_log/{1:020d}.json")
    with s3_proxy(s3_server.port, barrier) as endpoint:
        conf = _s3a_conf(endpoint)
        isolated_session(spark, conf).createDataFrame([("setup", 0)], SCHEMA).write.format("delta").save(
            table
        )
        driver_conf = {f"spark.hadoop.{k}": v for k, v in conf.items()}
        driver_conf[SWITCH_CONF] = "false"
        drivers = [_driver(table, driver_conf, "first", 1), _driver(table, driver_conf, "second", 2)]
        outputs = [_finished(driver) for driver in drivers]
    assert all("log store: Delta's default" in output for output in outputs), outputs

    # Both uploads of version 1 went through, unconditionally (conditional create is on by default, but
    # the log store's create does not use it): both drivers reported success, one row is gone.
    assert barrier.conditional == [False, False]
    assert barrier.statuses == [200, 200]
    assert _writers(s3_server, table) in (["first", "setup"], ["second", "setup"])


def test_two_drivers_racing_one_commit_both_land_with_the_put_if_absent_log_store(
    spark: SparkSession, s3_server: S3Server
) -> None:
    """This test's JVM and a second driver, both with the provider's default S3 log store, race for version
    1: the second upload fails its precondition, that driver retries at version 2, nothing is lost."""
    assert spark.sparkContext.getConf().get("spark.delta.logStore.s3a.impl") == PUT_IF_ABSENT_LOG_STORE
    bucket = s3_server.new_bucket("race-pia")
    table = f"s3a://{bucket}/t"
    barrier = CommitBarrier(f"{bucket}/t/_delta_log/{1:020d}.json")
    with s3_proxy(s3_server.port, barrier) as endpoint:
        conf = _s3a_conf(endpoint)
        session = isolated_session(spark, conf)
        session.createDataFrame([("setup", 0)], SCHEMA).write.format("delta").save(table)
        second = _driver(table, {f"spark.hadoop.{k}": v for k, v in conf.items()}, "second", 2)
        errors: list[BaseException] = []

        def first_driver() -> None:
            try:
                session.createDataFrame([("first", 1)], SCHEMA).write.format("delta").mode("append").save(
                    table
                )
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        first = threading.Thread(target=first_driver, name="first-driver")
        first.start()
        output = _finished(second)
        first.join(120)
    assert f"log store: {PUT_IF_ABSENT_LOG_STORE}" in output
    assert not errors, errors

    assert barrier.conditional == [True, True]
    assert sorted(barrier.statuses) == [200, 412]
    assert _writers(s3_server, table) == ["first", "second", "setup"]
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.version() == 2
    assert [c["operation"] for c in delta.history()] == ["WRITE", "WRITE", "WRITE"]


def test_four_writers_of_three_drivers_and_a_delta_rs_writer_race_on_one_s3_table_and_lose_nothing(
    spark: SparkSession,
    s3_server: S3Server,
    spark_connect_server: ConnectServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The same set-up, through the operators, on a table partitioned by ``p``: an append and a pinned MERGE
    in this worker's JVM (partition a), an append in a spark-submit driver of its own and a pinned MERGE on
    the Spark Connect server (partition b), all with an ``aws_conn_id`` whose endpoint is the holding proxy,
    and a delta-rs append beside them (partition c). The first upload of version 1 is held until a second
    writer uploads it. With the put-if-absent log store nobody holds an exclusive lease: the writers
    overlap, the losing upload fails with 412, a MERGE that lost to its partition's append retries on a
    classified conflict, and every writer commits exactly once."""
    bucket = s3_server.new_bucket("guarded")
    table = f"s3a://{bucket}/t"
    barrier = CommitBarrier(f"{bucket}/t/_delta_log/{1:020d}.json", timeout_s=30.0)
    store_url = f"sqlite:///{tmp_path / 'leases.db'}"
    submit_conn = json.dumps({"conn_type": "spark", "host": "local[1]"})
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_RACE_SUBMIT", submit_conn)
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_RACE_CONNECT", spark_connect_server.conn_uri)
    with s3_proxy(s3_server.port, barrier) as endpoint:
        proxied = json.loads(s3_server.connection_uri())
        proxied["extra"]["endpoint_url"] = endpoint
        monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_PROXIED", json.dumps(proxied))
        common: dict[str, Any] = {
            "table": table,
            "aws_conn_id": "deltacc_s3_proxied",
            "lease_store_url": store_url,
            "unsafe_storage_wait_timeout": 240.0,
        }

        def rows(writer: str, n: int, part: str) -> dict[str, Any]:
            return {"kind": "rows", "rows": [[writer, n, part]], "schema": PARTITIONED_SCHEMA}

        create = DeltaAppendOperator(
            task_id="create",
            source={**rows("setup-a", 0, "a"), "rows": [["setup-a", 0, "a"], ["setup-b", 0, "b"]]},
            partition_by=["p"],
            execution_mode="in_process",
            **common,
        )
        assert create.execute(make_context(task_id="create"))["status"] == "committed"
        # Partition a: an append and a MERGE pinned to a (its keys hold the partition column), in this JVM;
        # partition b: an append in a spark-submit driver and a pinned MERGE on the Connect server;
        # partition c: the delta-rs append.
        writers = [
            DeltaAppendOperator(
                task_id="in_process", source=rows("in_process", 1, "a"), execution_mode="in_process", **common
            ),
            DeltaMergeOperator(
                task_id="in_process_merge",
                source=rows("setup-a", 5, "a"),  # updates a's setup row
                keys=["writer", "p"],
                execution_mode="in_process",
                **common,
            ),
            DeltaAppendOperator(
                task_id="spark_submit",
                source=rows("spark_submit", 2, "b"),
                execution_mode="spark_submit",
                conn_id="deltacc_s3_race_submit",
                driver_python=sys.executable,
                submit_options={"driver_memory": "512m"},
                **common,
            ),
            DeltaMergeOperator(
                task_id="spark_connect",
                source=rows("setup-b", 3, "b"),  # updates b's setup row
                keys=["writer", "p"],
                execution_mode="spark_connect",
                conn_id="deltacc_s3_race_connect",
                # The server's own settings are not visible to the worker: this says which log store it has.
                spark_conf={"spark.delta.logStore.s3a.impl": PUT_IF_ABSENT_LOG_STORE},
                **common,
            ),
        ]
        delta_rs_errors: list[BaseException] = []

        def delta_rs_writer() -> None:
            try:
                frame = pa.table({"writer": ["delta_rs"], "n": pa.array([4], pa.int32()), "p": ["c"]})
                options = {**s3_server.storage_options(), "AWS_ENDPOINT_URL": endpoint}
                write_deltalake(
                    table.replace("s3a://", "s3://"), frame, mode="append", storage_options=options
                )
            except BaseException as exc:  # surfaced below
                delta_rs_errors.append(exc)

        delta_rs = threading.Thread(target=delta_rs_writer, name="delta-rs")
        delta_rs.start()
        outcomes = run_side_by_side(writers)
        delta_rs.join(120)
        assert statuses(outcomes) == {op.task_id: "committed" for op in writers}, outcomes
        assert not delta_rs_errors, delta_rs_errors
        assert all("storage_safety" not in outcome for outcome in outcomes.values()), outcomes
        # A try that lost did so on a classified, retryable conflict, and only a MERGE can lose one (blind
        # appends never conflict); its next attempt redid the read-modify-write and committed.
        for task_id, outcome in outcomes.items():
            *lost, last = outcome["attempts"]
            assert last["outcome"] == "committed", (task_id, outcome["attempts"])
            for attempt in lost:
                assert task_id.endswith(("merge", "connect")), (task_id, attempt)
                assert attempt["outcome"] == "conflict", (task_id, attempt)
                assert attempt["conflict"]["kind"] in RETRYABLE_KINDS, (task_id, attempt)

        # A writer run again is answered by delta-rs from the S3 log, with the connection's options.
        again = DeltaAppendOperator(
            task_id="in_process", source=rows("in_process", 1, "a"), execution_mode="in_process", **common
        )
        assert again.execute(make_context(task_id="in_process"))["status"] == "skipped_duplicate"
    # Two writers (or more) uploaded version 1, put-if-absent: one won, the others lost with 412 and
    # committed later versions.
    assert len(barrier.conditional) >= 2 and all(barrier.conditional), barrier.conditional
    assert barrier.statuses.count(200) == 1 and set(barrier.statuses) == {200, 412}, barrier.statuses
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.version() == 5
    found = sorted((r["p"], r["writer"], r["n"]) for r in delta.to_pyarrow_table().to_pylist())
    assert found == [
        ("a", "in_process", 1),
        ("a", "setup-a", 5),
        ("b", "setup-b", 3),
        ("b", "spark_submit", 2),
        ("c", "delta_rs", 4),
    ]
    txns = [(t["appId"], t["version"]) for c in s3_server.log_commits(table) for t in c["txn"]]
    assert len(txns) == 5 and len(set(txns)) == 5, txns

    # No lease serialized them: the writers' leases overlapped.
    with store_from_url(store_url) as store:
        spans = sorted((lease.acquired_at, lease.released_at) for lease in store.history(table))
    assert len(spans) == 5
    assert any(end is not None and end > begin for (_, end), (begin, _) in itertools.pairwise(spans)), spans

    # The spark-submit command line carries neither the connection's keys nor any S3A setting.
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    command = [line for line in logged.splitlines() if "Spark-Submit cmd" in line]
    assert command and "fs.s3a" not in command[0] and ACCESS_KEY not in command[0]
    assert SECRET_KEY not in logged + json.dumps(list(outcomes.values()), default=str)
