"""The multi-driver hazard on S3, run: two Spark drivers (this test's JVM and a second one) commit the
same table version at the same moment, with Delta's default S3 log store (S3SingleDriverLogStore, which
excludes writers inside one JVM only). A proxy in front of the S3 API server holds the first commit upload
until the second arrives, so the race happens every time.

Reproduced with the locked versions (delta-spark 4.4, hadoop-aws 3.5.0): both uploads succeed, the second
overwrites the first, and one driver's commit is lost although both reported success. Hadoop 3.5's S3A
conditional create (``fs.s3a.create.conditional.enabled``, on by default) does not close it: it applies
only to files created through the ``createFile()`` builder with the conditional-overwrite option, while the
log store calls ``create(path, overwrite=false)``, whose upload carries no ``If-None-Match``.

The provider, given the same set-up and the same proxy, loses nothing: its storage guard serializes four
writers of three drivers (this JVM, a spark-submit driver, the Spark Connect server) through the lease
store, so each commits a version of its own, exactly once.
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

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.engine.confs import isolated_session
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.windows import store_from_url
from tests.integration.object_storage.side_by_side import run_side_by_side, statuses
from tests.support.s3_proxy import CommitBarrier, s3_proxy
from tests.support.s3_server import ACCESS_KEY, REGION, SECRET_KEY, S3Server
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.spark_connect import ConnectServer

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(2)]

SECOND_DRIVER = textwrap.dedent(
    """
    import json, sys
    from airflow_provider_deltacc.engine.session import local_delta_session

    plan = json.loads(sys.argv[1])
    spark = local_delta_session(app_name="second-driver", master="local[1]", extra_conf=plan["conf"])
    spark.createDataFrame([("second", 2)], "writer STRING, n INT").write.format("delta").mode(
        "append"
    ).save(plan["table"])
    spark.stop()
    """
)
SCHEMA = "writer STRING, n INT"


def _writers(s3: S3Server, table: str) -> list[str]:
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3.storage_options())
    return sorted(row["writer"] for row in delta.to_pyarrow_table().to_pylist())


def test_two_drivers_racing_one_commit_lose_one_with_the_default_s3_log_store(
    spark: SparkSession, s3_server: S3Server
) -> None:
    bucket = s3_server.new_bucket("race")
    table = f"s3a://{bucket}/t"
    barrier = CommitBarrier(f"{bucket}/t/_delta_log/{1:020d}.json")
    with s3_proxy(s3_server.port, barrier) as endpoint:
        conf = {
            "fs.s3a.access.key": ACCESS_KEY,
            "fs.s3a.secret.key": SECRET_KEY,
            "fs.s3a.endpoint": endpoint,
            "fs.s3a.endpoint.region": REGION,
            "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false",
        }
        session = isolated_session(spark, conf)
        session.createDataFrame([("setup", 0)], SCHEMA).write.format("delta").save(table)
        plan = {"table": table, "conf": {f"spark.hadoop.{k}": v for k, v in conf.items()}}
        second = subprocess.Popen(
            [sys.executable, "-c", SECOND_DRIVER, json.dumps(plan)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
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
        output, _ = second.communicate(timeout=300)
        first.join(120)
    failures = [line for line in output.splitlines() if "Exception" in line]
    assert second.returncode == 0, "\n".join(failures)[:3000]
    assert not errors, errors

    # Both uploads of version 1 went through, unconditionally (conditional create is on by default, but
    # the log store's create does not use it): both drivers reported success, one row is gone.
    assert barrier.conditional == [False, False]
    assert barrier.statuses == [200, 200]
    assert _writers(s3_server, table) in (["first", "setup"], ["second", "setup"])


def test_the_provider_serializes_four_writers_of_three_drivers_and_loses_nothing(
    spark: SparkSession,
    s3_server: S3Server,
    spark_connect_server: ConnectServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The same set-up, through the operators: two writers in this worker's JVM (an append and a MERGE), one
    in a spark-submit driver of its own and one on the Spark Connect server, all with an ``aws_conn_id``
    whose endpoint is the holding proxy. Every writer commits exactly once, one at a time."""
    bucket = s3_server.new_bucket("guarded")
    table = f"s3a://{bucket}/t"
    barrier = CommitBarrier(f"{bucket}/t/_delta_log/{1:020d}.json", timeout_s=3.0)
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

        def rows(writer: str, n: int) -> dict[str, Any]:
            return {"kind": "rows", "rows": [[writer, n]], "schema": SCHEMA}

        create = DeltaAppendOperator(
            task_id="create", source=rows("setup", 0), execution_mode="in_process", **common
        )
        assert create.execute(make_context(task_id="create"))["status"] == "committed"
        writers = [
            DeltaAppendOperator(
                task_id="in_process", source=rows("in_process", 1), execution_mode="in_process", **common
            ),
            DeltaMergeOperator(
                task_id="in_process_merge",
                source=rows("setup", 5),  # updates the setup row
                keys=["writer"],
                execution_mode="in_process",
                **common,
            ),
            DeltaAppendOperator(
                task_id="spark_submit",
                source=rows("spark_submit", 2),
                execution_mode="spark_submit",
                conn_id="deltacc_s3_race_submit",
                driver_python=sys.executable,
                submit_options={"driver_memory": "512m"},
                **common,
            ),
            DeltaMergeOperator(
                task_id="spark_connect",
                source=rows("spark_connect", 3),  # a new key: inserted
                keys=["writer"],
                execution_mode="spark_connect",
                conn_id="deltacc_s3_race_connect",
                **common,
            ),
        ]
        outcomes = run_side_by_side(writers)
        assert statuses(outcomes) == {op.task_id: "committed" for op in writers}, outcomes
        assert {outcomes[op.task_id]["storage_safety"]["guard"] for op in writers} == {"exclusive_lease"}

        # A writer run again is answered by delta-rs from the S3 log, with the connection's options.
        again = DeltaAppendOperator(
            task_id="in_process", source=rows("in_process", 1), execution_mode="in_process", **common
        )
        assert again.execute(make_context(task_id="in_process"))["status"] == "skipped_duplicate"
    assert barrier.statuses == [200]  # version 1 was uploaded once: each writer committed its own version
    delta = DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3_server.storage_options())
    assert delta.version() == 4
    found = sorted((r["writer"], r["n"]) for r in delta.to_pyarrow_table().to_pylist())
    assert found == [("in_process", 1), ("setup", 5), ("spark_connect", 3), ("spark_submit", 2)]
    txns = [(t["appId"], t["version"]) for c in s3_server.log_commits(table) for t in c["txn"]]
    assert len(txns) == 5 and len(set(txns)) == 5, txns

    # The storage guard held every writer alone: no two exclusive leases overlapped.
    with store_from_url(store_url) as store:
        spans = sorted((lease.acquired_at, lease.released_at) for lease in store.history(table))
    assert len(spans) == 5
    for (_, end), (begin, _) in itertools.pairwise(spans):
        assert end is not None and end <= begin, spans

    # The spark-submit command line carries neither the connection's keys nor any S3A setting.
    out, err = capfd.readouterr()
    logged = caplog.text + out + err
    command = [line for line in logged.splitlines() if "Spark-Submit cmd" in line]
    assert command and "fs.s3a" not in command[0] and ACCESS_KEY not in command[0]
    assert SECRET_KEY not in logged + json.dumps(list(outcomes.values()), default=str)
