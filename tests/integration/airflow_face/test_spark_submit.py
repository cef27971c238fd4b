"""The hook's real spark-submit path: client mode against a Spark standalone master and worker on
127.0.0.1, with a driver Python that has neither the provider nor pyspark installed. What reaches the driver
is only what the hook ships: pyspark's own ``python/lib`` zips (added by spark-submit), the Delta jar (which
carries the ``delta`` Python package) and the py-files bundle (the core zip and tenacity's zip)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.deltacc import DeltaCCHook
from airflow_provider_deltacc.hooks.submit_options import SparkSubmitOptions

pytestmark = pytest.mark.integration

CONN_ID = "deltacc_test_standalone"


@pytest.fixture
def bare_python(tmp_path: Path) -> str:
    """A venv without pip: the base interpreter and its stdlib, no site-packages of ours."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    for module in ("airflow_provider_deltacc", "pyspark", "tenacity", "delta"):
        probe = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, cwd=tmp_path)
        assert probe.returncode != 0, f"the bare driver Python can import {module}"
    return str(python)


@pytest.fixture
def standalone_conn(spark_standalone: str, monkeypatch: pytest.MonkeyPatch) -> str:
    host_port = spark_standalone.removeprefix("spark://")
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", f"spark://{host_port}")
    return CONN_ID


def test_spark_submit_runs_the_bundle_on_a_bare_driver_python(
    standalone_conn: str, bare_python: str, tmp_path: Path
) -> None:
    from deltalake import DeltaTable

    hook = DeltaCCHook(
        conn_id=standalone_conn,
        execution_mode="spark_submit",
        driver_python=bare_python,
        job_name="deltacc-spark-submit-test",
        submit_options=SparkSubmitOptions(
            driver_memory="512m", executor_memory="512m", total_executor_cores=1
        ),
    )
    table = str(tmp_path / "events")
    spec: dict[str, Any] = {
        "operation": "append",
        "table": table,
        "source": {
            "kind": "rows",
            "rows": [[1, "a", "x"], [2, "b", "y"]],
            "schema": "id INT, p STRING, v STRING",
        },
        "options": {"partition_by": ["p"]},
        "txn": {"app_id": "spark-submit-test", "version": 1},
    }

    report = hook.run(spec)

    assert report["status"] == "committed" and report["table_version"] == 0, report
    assert report["operation"] == "APPEND" and len(report["attempts"]) == 1
    assert (report["txn_app_id"], report["txn_version"]) == ("spark-submit-test", 1)
    delta = DeltaTable(table)
    assert delta.metadata().partition_columns == ["p"]
    assert sorted((r["id"], r["p"], r["v"]) for r in delta.to_pyarrow_table().to_pylist()) == [
        (1, "a", "x"),
        (2, "b", "y"),
    ]

    # A spec the job rejects: exit code 64 (bad input) -> DeltaCCInputError naming the field.
    bad = {**spec, "operation": "merge", "options": {}, "txn": None}
    with pytest.raises(DeltaCCInputError) as raised:
        hook.run(bad)
    assert raised.value.field == "options.keys"
    assert raised.value.report["status"] == "bad_input"
    assert DeltaTable(table).version() == 0
