"""The advisor works offline on DAG files: analysing every example DAG imports no pyspark, delta or py4j."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

DAGS = Path(__file__).resolve().parents[3] / "dags"


def test_analysing_the_example_dags_imports_no_spark() -> None:
    code = (
        "import json, sys\n"
        "from airflow_provider_deltacc.advisor.cli import run\n"
        f"exit_code, text = run([{str(DAGS)!r}, '--json'])\n"
        "assert exit_code == 0, text\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'delta', 'py4j'))\n"
        "print(json.dumps({'heavy': heavy, 'findings': len(json.loads(text)['findings'])}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=os.environ.copy()
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["heavy"] == []
    assert result["findings"] > 0
