"""A writer task builds its typed job spec once, in every execution mode: from the operator's arguments
through the storage guard, the Delta log, the lease and the hook to what runs the job, nothing parses or
builds it again (the dict and JSON forms are read only at the hook's public entry and by the Spark driver).
Spark itself is faked: the job's run in this process, the Spark Connect server, the spark-submit driver."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

import airflow_provider_deltacc.hooks.connect as connect
import airflow_provider_deltacc.spark_job.main as job_main
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.hooks.connect import SparkConnectRunner
from airflow_provider_deltacc.operators import DeltaMergeOperator
from tests.support.spec_builds import count_spec_builds
from tests.unit.airflow_face.conftest import make_context

pytestmark = pytest.mark.unit

CONN_ID = "deltacc_spec_once"
SCHEMA = "id BIGINT, day STRING"


def _committed(spec: JobSpec) -> dict[str, Any]:
    return {"status": "committed", "table": spec.table.name, "table_version": 1, "attempts": [{"number": 1}]}


class _FakeSession:
    session_id = "session-0"

    def __init__(self) -> None:
        self.conf = self

    def get(self, key: str, default: Any = None) -> str:
        return "local-1"

    def stop(self) -> None:
        return None


class _FakeSubmitHook:
    """The spark-submit driver: reads the spec file it was given, as the driver would, and reports."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs, self.secrets, self.returncode, self.driver_exit_code = kwargs, [], 0, None
        self.log = logging.getLogger(__name__)
        self.report: dict[str, Any] | None = None

    def submit(self, application: str) -> None:
        (spec_file,) = self.kwargs["application_args"][1:]
        self.submitted = json.loads(Path(spec_file).read_text())
        self.report = {"status": "committed", "table": self.submitted["table"], "attempts": []}


@pytest.fixture
def fake_spark(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Fakes Spark in each mode; returns what reached the job (the typed spec, or the spec file's JSON)."""
    reached: list[Any] = []

    def run_job(
        spec: Any, spark: Any = None, *, turns: Any = None, **kwargs: Any
    ) -> tuple[int, dict[str, Any]]:
        reached.append(spec)
        return 0, _committed(spec)

    monkeypatch.setattr(job_main, "run_job", run_job)
    monkeypatch.setattr(connect, "new_connect_session", lambda url: _FakeSession())
    monkeypatch.setattr(SparkConnectRunner, "check_reachable", lambda self, timeout_s=5.0: None)
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}_CONNECT", "spark-connect://connect-host:15002?session_reuse=false"
    )
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "spark", "host": "local[1]"})
    )
    return reached


@pytest.mark.parametrize("mode", ["in_process", "spark_connect", "spark_submit"])
def test_a_writer_builds_its_typed_spec_once_in_every_mode(
    mode: str, tmp_path: Path, fake_spark: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    op = DeltaMergeOperator(
        task_id="merge_orders",
        table=str(tmp_path / "orders"),  # no table yet: the Delta log cannot answer, the job runs
        source={"kind": "rows", "rows": [[1, "2026-11-20"]], "schema": SCHEMA},
        keys=["id"],
        execution_mode=mode,
        conn_id={"spark_connect": f"{CONN_ID}_connect", "spark_submit": CONN_ID}.get(mode),
        lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
    )
    submitted: list[_FakeSubmitHook] = []
    if mode == "spark_submit":

        def submit_hook_for(**kwargs: Any) -> _FakeSubmitHook:
            submitted.append(_FakeSubmitHook(**kwargs))
            return submitted[-1]

        monkeypatch.setattr(op.hook.submit_runner, "submit_hook_for", submit_hook_for)
    calls = count_spec_builds(monkeypatch)

    assert op.execute(make_context())["status"] == "committed"

    assert calls == ["job_spec"]  # built once from the operator's arguments; never parsed in the worker
    if mode == "spark_submit":
        (job,) = [hook.submitted for hook in submitted]
        assert parse_spec(job).txn is not None  # the driver's side of the JSON boundary reads it back
    else:
        (job,) = fake_spark
        assert isinstance(job, JobSpec) and job.txn is not None
