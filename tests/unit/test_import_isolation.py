"""DAG files are parsed constantly: the Airflow face must not pull in pyspark, delta or py4j, and the
bundled core (occ/engine/spark_job) must not pull in Airflow."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

HEAVY = ("pyspark", "delta", "py4j")


def _modules_after(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "statement",
    [
        "import airflow_provider_deltacc.operators as m; [getattr(m, n) for n in m.__all__]",
        "import airflow_provider_deltacc.sensors.table_version",
        "import airflow_provider_deltacc.triggers.table_version",
        "import airflow_provider_deltacc.hooks.deltacc",
        "import airflow_provider_deltacc.retry_policy",
    ],
)
def test_airflow_face_does_not_import_spark(statement: str) -> None:
    loaded = _modules_after(statement)
    leaked = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not leaked, f"{statement!r} imported {leaked[:5]}"


@pytest.mark.parametrize(
    "statement",
    [
        "import airflow_provider_deltacc.occ as m; m.run_commit_loop; m.RetryPolicy",
        "import airflow_provider_deltacc.spark_job.spec, airflow_provider_deltacc.spark_job.exit_codes",
        "import airflow_provider_deltacc.engine.delta_jars",
    ],
)
def test_bundled_core_does_not_import_airflow(statement: str) -> None:
    loaded = _modules_after(statement)
    leaked = sorted(m for m in loaded if m.split(".")[0] in {"airflow", "pyspark", "delta", "py4j"})
    assert not leaked, f"{statement!r} imported {leaked[:5]}"
