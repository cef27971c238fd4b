"""The example DAG of known pairs has the verdicts its docstring documents (checked on Delta in
``tests/integration/advisor``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.advisor.analysis import analyse
from airflow_provider_deltacc.advisor.findings import FindingLevel
from airflow_provider_deltacc.advisor.loader import load_dags

pytestmark = pytest.mark.unit

DAG_FILE = Path(__file__).resolve().parents[3] / "dags" / "example_advisor_pairs.py"
#: The verdict the example DAG documents for each table's pair (table ``advisor_<name>``).
EXPECTED = {
    "unpinned": FindingLevel.WILL,
    "pinned": FindingLevel.CANNOT,
    "same_partition": FindingLevel.WILL,
    "disjoint": FindingLevel.CANNOT,
    "optimize": FindingLevel.CAN,
    "schema": FindingLevel.WILL,
    "appends": FindingLevel.CANNOT,
    "mapped": FindingLevel.WILL,
    "vacuum": FindingLevel.HAZARD,
}


def test_every_pair_of_the_example_has_its_documented_verdict() -> None:
    [dag] = load_dags([DAG_FILE])
    findings = analyse([dag]).findings
    assert {f.table.rsplit("/advisor_", 1)[1]: f.level for f in findings} == EXPECTED
    assert len(findings) == len(EXPECTED), "one pair per table"
    for level in FindingLevel:
        assert f"**{level.value}**" in (dag.doc_md or ""), f"the docstring documents {level.value}"
