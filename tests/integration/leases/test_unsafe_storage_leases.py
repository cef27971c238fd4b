"""Object-storage safety with real lease stores: two writer operators on an ``s3a://`` table without a
multi-writer log store (Delta's own S3 log store: the provider's put-if-absent one turned off) never
overlap. The second refuses (naming the table, the missing setting and the override) while the first holds
its exclusive lease; the override lets it through; a lone writer runs normally; maintenance waits for the
writer; with the DynamoDB log store writers overlap as usual.

No S3 is needed: the refusal happens before any Spark work, so the jobs are stand-ins that record the spec
they were given (the first one blocks until the test lets it finish)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_deltacc.contract.storage_safety import DYNAMODB_LOG_STORE, OVERRIDE_ENV
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.fast_path import LogAnswer
from airflow_provider_deltacc.exceptions import DeltaCCInputError, DeltaUnsafeStorageError
from airflow_provider_deltacc.leases import store_from_url
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator, DeltaOptimizeOperator
from airflow_provider_deltacc.spark_jars.put_if_absent import SWITCH_CONF
from tests.support.spec_views import json_view
from tests.unit.airflow_face.conftest import make_context

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

TABLE = "s3a://deltacc-no-such-bucket/orders"
ROWS = {"kind": "rows", "rows": [[1, "a"]], "schema": "id INT, p STRING"}
COMMITTED = {"status": "committed", "table_version": 1, "attempts": [{"number": 1}]}


class StandInJob:
    """Replaces ``operator.hook``: records each spec; optionally blocks until released."""

    loop_runs_here = True  # the job takes its turns itself, as in spark_connect and in_process mode
    driver_reaches_worker = False

    def __init__(self, *, block: bool = False) -> None:
        self.specs: list[dict[str, Any]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        if not block:
            self.release.set()

    def check_deployment(self, table: Table) -> None:
        return None

    def consult_log(self, spec: Any) -> LogAnswer:
        return LogAnswer()

    def run(self, spec: Any, *, consult_log: bool = True, turns: Any = None) -> dict[str, Any]:
        spec = json_view(spec)  # as a spark-submit driver reads it
        self.specs.append(spec)
        self.started.set()
        assert self.release.wait(60), "the test never released the first writer"
        return {**COMMITTED, "table": spec["table"], "operation": spec["operation"].upper()}

    def on_kill(self) -> None:
        self.release.set()


def _writer(task_id: str, store_url: str, job: StandInJob, **kwargs: Any) -> DeltaAppendOperator:
    op = DeltaAppendOperator(
        task_id=task_id,
        table=TABLE,
        source=ROWS,
        execution_mode="in_process",
        lease_store_url=store_url,
        unsafe_storage_wait_timeout=kwargs.pop("unsafe_storage_wait_timeout", 1.0),
        lease_ttl=30.0,
        spark_conf={SWITCH_CONF: "false", **kwargs.pop("spark_conf", {})},
        **kwargs,
    )
    op.__dict__["hook"] = job  # the cached hook property
    return op


@pytest.fixture
def first_writer(store_url: str) -> Iterator[tuple[StandInJob, threading.Thread, list[Any]]]:
    """Writer A, running in a thread and holding its exclusive lease until the test releases it."""
    job = StandInJob(block=True)
    op = _writer("writer_a", store_url, job)
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(op.execute(make_context(task_id="writer_a")))
        except BaseException as exc:  # surfaced by the test
            outcome.append(exc)

    thread = threading.Thread(target=run, name="writer-a", daemon=True)
    thread.start()
    assert job.started.wait(30), f"writer A never started its job: {outcome}"
    try:
        yield job, thread, outcome
    finally:
        job.release.set()
        thread.join(30)


def test_second_writer_refuses_while_the_first_holds_its_lease(
    store_url: str, first_writer: tuple[StandInJob, threading.Thread, list[Any]]
) -> None:
    job_a, thread_a, outcome_a = first_writer
    assert job_a.specs[0]["storage_guard"] == "exclusive_lease"
    with store_from_url(store_url) as store:
        live = store.active(TABLE)
    assert [lease.holder.split("/")[0] for lease in live] == ["orders_dag.writer_a"]

    # B (a MERGE, even on other partitions) waits its bounded second and refuses; its job never runs.
    job_b = StandInJob()
    merge = DeltaMergeOperator(
        task_id="writer_b",
        table=TABLE,
        source=ROWS,
        keys=["id"],
        execution_mode="in_process",
        lease_store_url=store_url,
        unsafe_storage_wait_timeout=1.0,
        spark_conf={SWITCH_CONF: "false"},
    )
    merge.__dict__["hook"] = job_b
    started = time.monotonic()
    with pytest.raises(DeltaUnsafeStorageError) as raised:
        merge.execute(make_context(task_id="writer_b"))
    assert time.monotonic() - started < 15
    message = str(raised.value)
    assert TABLE in message
    assert f"spark.delta.logStore.s3a.impl={DYNAMODB_LOG_STORE}" in message
    assert "allow_unsafe_concurrent_writes=True" in message and OVERRIDE_ENV in message
    assert "orders_dag.writer_a" in message  # who holds the table
    assert job_b.specs == []
    assert raised.value.report["storage_safety"]["safe"] is False

    # The explicit override lets a writer through while A still writes; the spec says so.
    job_c = StandInJob()
    override = _writer("writer_c", store_url, job_c, allow_unsafe_concurrent_writes=True)
    report = override.execute(make_context(task_id="writer_c"))
    assert report["status"] == "committed"
    assert job_c.specs[0]["storage_guard"] == "override"

    # Maintenance waits for the writer too (OPTIMIZE would not wait for a blind append on safe storage).
    job_m = StandInJob()
    optimize = DeltaOptimizeOperator(
        task_id="optimize",
        table=TABLE,
        execution_mode="in_process",
        lease_store_url=store_url,
        deferrable=False,
        poll_interval=0.2,
        gate_wait_timeout=1.0,
        table_traits={"partitioned": True},
        spark_conf={SWITCH_CONF: "false"},
    )
    optimize.__dict__["hook"] = job_m
    with pytest.raises(Exception, match="gave up waiting") as waited:
        optimize.execute(make_context(task_id="optimize"))
    assert "cannot exclude concurrent writers" in str(waited.value)
    assert job_m.specs == []

    # A finishes and releases its lease: a lone writer then runs normally, with its exclusive lease.
    job_a.release.set()
    thread_a.join(30)
    assert outcome_a and outcome_a[0]["status"] == "committed", outcome_a
    job_d = StandInJob()
    alone = _writer("writer_d", store_url, job_d)
    assert alone.execute(make_context(task_id="writer_d"))["status"] == "committed"
    assert job_d.specs[0]["storage_guard"] == "exclusive_lease"
    with store_from_url(store_url) as store:
        assert store.active(TABLE) == []


def test_env_override_and_safe_log_store(
    store_url: str,
    first_writer: tuple[StandInJob, threading.Thread, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With the DynamoDB log store in spark_conf the table is safe: no exclusive lease, no storage_guard.
    job = StandInJob()
    safe = _writer(
        "writer_dynamo", store_url, job, spark_conf={"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE}
    )
    assert safe.execute(make_context(task_id="writer_dynamo"))["status"] == "committed"
    assert "storage_guard" not in job.specs[0]

    # The environment override works like the argument.
    monkeypatch.setenv(OVERRIDE_ENV, "true")
    job_env = StandInJob()
    assert _writer("writer_env", store_url, job_env).execute(make_context(task_id="writer_env"))
    assert job_env.specs[0]["storage_guard"] == "override"


def test_writer_without_a_lease_is_refused_on_unsafe_storage(store_url: str) -> None:
    job = StandInJob()
    op = _writer("no_lease", store_url, job, use_write_lease=False)
    with pytest.raises(DeltaCCInputError) as raised:
        op.execute(make_context(task_id="no_lease"))
    assert raised.value.field == "use_write_lease"
    assert "allow_unsafe_concurrent_writes" in str(raised.value) and TABLE in str(raised.value)
    assert job.specs == []


def test_unreachable_lease_store_refuses_instead_of_writing_unguarded() -> None:
    job = StandInJob()
    op = _writer("store_down", "postgresql://deltacc:x@127.0.0.1:1/none?connect_timeout=2", job)
    with pytest.raises(DeltaUnsafeStorageError, match="lease store is unavailable"):
        op.execute(make_context(task_id="store_down"))
    assert job.specs == []
