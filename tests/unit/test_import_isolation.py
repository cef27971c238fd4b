"""DAG files are parsed constantly: the Airflow face must not pull in pyspark, delta or py4j, and the
bundled core (occ/engine/spark_job) must not pull in Airflow."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

AIRFLOW_FACE = [
    "import airflow_provider_deltacc.operators as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.sensors.table_version",
    "import airflow_provider_deltacc.sensors.write_window",
    "import airflow_provider_deltacc.triggers.table_version",
    "import airflow_provider_deltacc.triggers.gate",
    "import airflow_provider_deltacc.hooks.deltacc",
    "import airflow_provider_deltacc.retry_policy",
    "import airflow_provider_deltacc.windows",
    "import airflow_provider_deltacc.task_groups",
]
BUNDLED_CORE = [
    "import airflow_provider_deltacc.occ as m; m.run_commit_loop; m.CommitRetryPolicy",
    "import airflow_provider_deltacc.conflict_matrix",
    "import airflow_provider_deltacc.spark_job.spec, airflow_provider_deltacc.spark_job.exit_codes",
    "import airflow_provider_deltacc.engine.delta_jars",
]


def _modules_after(statements: list[str]) -> set[str]:
    code = "import json, sys\n" + "\n".join(statements) + "\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def _roots(modules: set[str], banned: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in banned)


def test_airflow_face_does_not_import_spark() -> None:
    loaded = _modules_after(AIRFLOW_FACE)
    assert "airflow_provider_deltacc.operators.write" in loaded  # the lazy names really were resolved
    leaked = _roots(loaded, {"pyspark", "delta", "py4j"})
    assert not leaked, f"the operators/sensors/triggers/hooks imported {leaked[:8]}"


def test_bundled_core_does_not_import_airflow_or_spark() -> None:
    loaded = _modules_after(BUNDLED_CORE)
    assert "airflow_provider_deltacc.occ.commit_loop" in loaded
    leaked = _roots(loaded, {"airflow", "pyspark", "delta", "py4j"})
    assert not leaked, f"the bundled core imported {leaked[:8]}"


def test_log_fast_path_runs_in_the_worker_without_airflow_or_spark() -> None:
    loaded = _modules_after(["import airflow_provider_deltacc.log_fast_path"])
    assert "airflow_provider_deltacc.engine.txn" in loaded
    leaked = _roots(loaded, {"airflow", "pyspark", "delta", "py4j", "deltalake"})
    assert not leaked, f"the log fast path imported {leaked[:8]} (deltalake only when it reads a log)"
