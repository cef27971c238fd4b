"""The PySpark a real pipeline uses, in every execution mode, inside a real Airflow task process.

Each family of :mod:`tests.integration.airflow_face.pyspark_families` is a source function of one writer
task of a DAG file (``pyspark_dags/``); each mode parses it and runs it with ``dag.test()`` in a fresh Python
process (the ``spark_connect`` one holds no JVM, as a task of that mode does not). One more task's UDF is a
function of the DAG file itself. In ``spark_submit`` mode, where every task starts a driver, one decorated
writer's source function (a function of the DAG file, given the inputs' folder) runs every family and that
UDF, each family's rows as JSON beside its name. Every task must succeed and every family's rows be exactly
its own, read back with delta-rs. Over Spark Connect, a UDF whose Python the server cannot load fails its
task as bad input naming the function and the fix, on its first try, with nothing written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.integration.airflow_face import pyspark_families as families
from tests.integration.airflow_face.pyspark_families_run import RESULT_PREFIX

pytestmark = [pytest.mark.integration, pytest.mark.slow_module(4.5)]

ROOT = Path(__file__).resolve().parents[3]
MODES = ("in_process", "spark_submit", "spark_connect")
#: The writer tasks of the DAG file but in ``spark_submit`` mode (one task there, ``all_families``).
WRITERS = (*families.FAMILIES, "dag_file_udf")
#: The rows every writer writes: a UDF made of the DAG file's own function (the file is pickled by value,
#: as to a ``spark_submit`` driver) tiers the orders.
EXPECTED = {
    **families.EXPECTED,
    "dag_file_udf": [{"id": i + 1, "tier": tier} for i, tier in enumerate([1, 2, 1, 1])],
}


def _run_mode(mode: str, root: Path, env: dict[str, str]) -> tuple[dict[str, Any], str]:
    completed = subprocess.run(
        [sys.executable, "-m", "tests.integration.airflow_face.pyspark_families_run", mode, str(root)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = completed.stdout + completed.stderr
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert completed.returncode == 0 and lines, output[-6000:]
    return json.loads(lines[-1].removeprefix(RESULT_PREFIX)), output


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: tuple(str(value) for value in row.values()))


def _rows(table: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    return _sorted(DeltaTable(str(table)).to_pyarrow_table().to_pylist())


def _rows_by_family(tables: Path, mode: str) -> dict[str, list[dict[str, Any]]]:
    """Each family's rows (and ``dag_file_udf``'s): from its own table, or in ``spark_submit`` mode from the
    one that :func:`~tests.integration.airflow_face.pyspark_families.all_families` wrote."""
    if mode != "spark_submit":
        return {name: _rows(tables / name) for name in WRITERS}
    combined: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(tables / families.ALL_FAMILIES):
        combined[row["family"]].append(json.loads(row["row"]))
    return {name: _sorted(rows) for name, rows in combined.items()}


@pytest.mark.parametrize("mode", MODES)
def test_every_pyspark_family_writes_its_rows_from_a_task_process(
    mode: str, airflow_db: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    env = {
        **os.environ,
        "DELTACC_LEASE_STORE_URL": f"sqlite:///{tmp_path / 'leases.db'}",
        "AIRFLOW_CONN_SPARK_DEFAULT": '{"conn_type": "spark", "host": "local[1]"}',
    }
    if mode == "spark_connect":
        env["AIRFLOW_CONN_SPARK_CONNECT_DEFAULT"] = request.getfixturevalue("spark_connect_server").conn_uri
    families.write_inputs(tmp_path / "inputs")
    families.write_client_only_module(tmp_path / "client-only")

    result, output = _run_mode(mode, tmp_path, env)

    writers = [families.ALL_FAMILIES] if mode == "spark_submit" else WRITERS
    expected_states = {name: ["success", 1] for name in writers}
    if mode == "spark_connect":
        expected_states["client_only"] = ["failed", 1]  # retries=2, and no retry: bad input
    assert result["states"] == expected_states, output[-6000:]
    assert result["jvm"] is (mode == "in_process")  # a spark_connect task process holds no JVM
    assert _rows_by_family(tmp_path / "tables", mode) == EXPECTED
    if mode == "spark_connect":
        # Nothing committed (a failed Spark job may leave data files that no commit names).
        assert not list((tmp_path / "tables" / "client_only" / "_delta_log").glob("*.json"))
        assert (
            f"source='tests.integration.airflow_face.pyspark_families.client_only': uses the module "
            f"'{families.CLIENT_ONLY_MODULE}', which Spark's Python workers cannot import"
        ) in output, output[-6000:]
        assert "Install the module where those workers run, or inline" in output
