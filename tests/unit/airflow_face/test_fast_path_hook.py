"""The Delta-log fast path through DeltaCCHook and the writer operators: a committed duplicate is answered
before anything starts, in every execution mode (no spark-submit, no Spark Connect session, no pyspark
import), the log is read once per task, and a writer answers before it takes a lease or meets the gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import airflow_provider_deltacc.delta_log.fast_path as fast_path
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from tests.support.spec_views import json_view
from tests.unit.airflow_face.conftest import make_context

pytestmark = pytest.mark.unit

APP_ID = "orders_dag.merge_orders"
SCHEMA = "id BIGINT, day STRING"


@pytest.fixture
def table(tmp_path: Path) -> str:
    """A table whose v1 recorded ``APP_ID`` version 7."""
    from deltalake import CommitProperties, Transaction, write_deltalake

    path = str(tmp_path / "orders")
    rows = pa.table({"id": pa.array([1], pa.int64()), "day": ["2026-11-20"]})
    write_deltalake(path, rows)
    write_deltalake(
        path,
        rows,
        mode="append",
        commit_properties=CommitProperties(app_transactions=[Transaction(app_id=APP_ID, version=7)]),
    )
    return path


def _spec(table: str, version: int) -> dict[str, Any]:
    return {
        "operation": "merge",
        "table": table,
        "source": {"kind": "rows", "rows": [[1, "2026-11-20"]], "schema": SCHEMA},
        "options": {"keys": ["id"]},
        "txn": {"app_id": APP_ID, "version": version},
    }


class StubRunner:
    """Stands in for a mode's runner; records the specs it was given."""

    def __init__(self) -> None:
        self.specs: list[dict[str, Any]] = []

    def run(self, spec: Any, *, turns: Any = None) -> tuple[int, dict[str, Any]]:
        self.specs.append(json_view(spec))
        return 0, {"status": "committed", "table": spec.table.name, "table_version": 2, "attempts": []}

    def on_kill(self) -> None:
        return None


class SparkMustNotStart:
    def run(self, spec: dict[str, Any], *, turns: Any = None) -> tuple[int, dict[str, Any]]:
        raise AssertionError("the job was started for a write the Delta log answers")

    def on_kill(self) -> None:
        return None


@pytest.fixture
def log_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every spec the fast path was asked about."""
    reads: list[dict[str, Any]] = []
    real = fast_path.consult_log

    def counting(spec: Any, **kwargs: Any) -> Any:
        reads.append(spec)
        return real(spec, **kwargs)

    monkeypatch.setattr(fast_path, "consult_log", counting)
    return reads


def _info_lines(hook: DeltaCCHook) -> list[str]:
    lines: list[str] = []
    hook.log.info = lambda fmt, *args: lines.append(fmt % args if args else fmt)  # type: ignore[method-assign]
    return lines


def test_spark_submit_mode_submits_nothing_for_a_duplicate(
    table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A master that does not exist: any submission would fail, so a report proves nothing was submitted.
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_NOWHERE", "spark://no-such-master.invalid:7077")
    hook = DeltaCCHook(conn_id="deltacc_nowhere", execution_mode="spark_submit")
    lines = _info_lines(hook)

    report = hook.run(_spec(table, 7))

    assert report["status"] == "skipped_duplicate" and report["table_version"] == 1, report
    assert report["metrics"]["answered_by"] == "delta-log" and report["metrics"]["committed_version"] == 1
    assert "runner" not in hook.__dict__ and "submit_runner" not in hook.__dict__
    assert len(lines) == 1 and lines[0].startswith("Answered from the Delta log, no Spark started: MERGE on")


def test_spark_connect_mode_opens_no_session_for_a_duplicate(
    table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_NO_CONNECT", "spark_connect://127.0.0.1:9")
    hook = DeltaCCHook(conn_id="deltacc_no_connect", execution_mode="spark_connect")
    report = hook.run(_spec(table, 6))
    assert report["status"] == "skipped_duplicate" and report["metrics"]["recorded_txn_version"] == 7
    assert "runner" not in hook.__dict__


def test_in_process_mode_never_imports_pyspark_for_a_duplicate(table: str) -> None:
    code = (
        "import json, sys\n"
        "from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook\n"
        "report = DeltaCCHook(execution_mode='in_process').run(json.loads(sys.argv[1]))\n"
        "spark = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'delta'))\n"
        "print(json.dumps({'status': report['status'], 'spark_modules': spark}))\n"
    )
    spec = json.dumps(_spec(table, 7))
    out = subprocess.run(
        [sys.executable, "-c", code, spec], check=True, capture_output=True, text=True
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"status": "skipped_duplicate", "spark_modules": []}


def test_a_write_the_log_cannot_answer_runs_the_job(table: str, log_reads: list[dict[str, Any]]) -> None:
    hook = DeltaCCHook(execution_mode="in_process")
    runner = StubRunner()
    hook.__dict__["runner"] = runner
    report = hook.run(_spec(table, 8))
    assert report["status"] == "committed" and [s["txn"]["version"] for s in runner.specs] == [8]
    assert len(log_reads) == 1


@pytest.mark.parametrize("version", [7, 8], ids=["answered_by_the_log", "run"])
def test_a_run_prepares_its_spec_once(table: str, version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The connections' settings are merged in and the secrets masked once per run: the log check and the job
    get the same prepared spec."""
    hook = DeltaCCHook(execution_mode="in_process")
    hook.__dict__["runner"] = StubRunner()
    prepared: list[Any] = []
    prepare = hook.job_spec

    def counting(spec: Any) -> Any:
        prepared.append(spec)
        return prepare(spec)

    monkeypatch.setattr(hook, "job_spec", counting)
    hook.run(_spec(table, version))
    assert len(prepared) == 1


def test_the_hooks_spark_conf_reaches_the_log_check(table: str) -> None:
    # Spark would resolve the scheme-less path on HDFS: the local table must not answer for it.
    hook = DeltaCCHook(
        execution_mode="in_process", spark_conf={"spark.hadoop.fs.defaultFS": "hdfs://nn:8020"}
    )
    runner = StubRunner()
    hook.__dict__["runner"] = runner
    assert hook.consult_log(_spec(table, 7)).report is None
    hook.run(_spec(table, 7))
    assert runner.specs[0]["spark_conf"] == {"spark.hadoop.fs.defaultFS": "hdfs://nn:8020"}


def test_a_caller_that_already_asked_the_log_runs_the_job(
    table: str, log_reads: list[dict[str, Any]]
) -> None:
    hook = DeltaCCHook(execution_mode="in_process")
    runner = StubRunner()
    hook.__dict__["runner"] = runner
    hook.run(_spec(table, 7), consult_log=False)
    assert len(runner.specs) == 1 and log_reads == []


def _merge_operator(table: str, version: int, tmp_path: Path) -> DeltaMergeOperator:
    return DeltaMergeOperator(
        task_id="merge_orders",
        table=table,
        source={"kind": "rows", "rows": [[1, "2026-11-20"]], "schema": SCHEMA},
        keys=["id"],
        execution_mode="in_process",
        txn_app_id=APP_ID,
        txn_version=version,
        lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
        maintenance_wait_timeout=600,
    )


def test_a_duplicate_writer_takes_no_lease_and_never_waits_at_the_gate(
    table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_reads: list[dict[str, Any]]
) -> None:
    import airflow_provider_deltacc.turns as turns

    def no_lease(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a duplicate took a write lease (and could wait for maintenance)")

    monkeypatch.setattr(turns, "writer_lease", no_lease)
    monkeypatch.setattr(turns, "exclusive_writer_lease", no_lease)
    op = _merge_operator(table, 7, tmp_path)
    op.hook.__dict__["runner"] = SparkMustNotStart()
    context = make_context()

    report = op.execute(context)

    assert report["status"] == "skipped_duplicate" and report["metrics"]["answered_by"] == "delta-log"
    assert context["ti"].pushed[REPORT_XCOM_KEY] == report
    assert len(log_reads) == 1


def test_a_writer_reads_the_log_once_then_runs_inside_its_lease(
    table: str, tmp_path: Path, log_reads: list[dict[str, Any]]
) -> None:
    from airflow_provider_deltacc.leases import store_from_url

    op = _merge_operator(table, 8, tmp_path)
    leases_during_run: list[int] = []

    class LeaseObservingRunner(StubRunner):
        def run(self, spec: dict[str, Any], *, turns: Any = None) -> tuple[int, dict[str, Any]]:
            with store_from_url(op.lease_store_url) as store:
                leases_during_run.append(len(store.active(table)))
            return super().run(spec)

    runner = LeaseObservingRunner()
    op.hook.__dict__["runner"] = runner
    report = op.execute(make_context())
    assert report["status"] == "committed" and len(runner.specs) == 1
    assert leases_during_run == [1] and len(log_reads) == 1


def test_a_writer_builds_its_typed_spec_once(
    table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_reads: list[dict[str, Any]]
) -> None:
    """From the operator's arguments to the runner, through the lease, the log and the storage guard, the
    spec is built in its typed form once: every later step gets the same object."""
    from tests.support.spec_builds import count_spec_builds

    built = count_spec_builds(monkeypatch)
    op = _merge_operator(table, 9, tmp_path)
    given: list[Any] = []

    class TypedRunner(StubRunner):
        def run(self, spec: Any, *, turns: Any = None) -> tuple[int, dict[str, Any]]:
            given.append(spec)
            return super().run(spec)

    op.hook.__dict__["runner"] = TypedRunner()
    assert op.execute(make_context())["status"] == "committed"
    assert built == ["job_spec"] and isinstance(given[0], JobSpec)
    assert given[0].txn is not None and given[0].txn.version == 9
