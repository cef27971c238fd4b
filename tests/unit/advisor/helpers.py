"""Small builders for the advisor's unit tests: in-memory DAGs of provider operators, one analysis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow_provider_deltacc.advisor.analysis import Analysis, analyse
from airflow_provider_deltacc.advisor.findings import Finding

REFERENCE = datetime(2026, 11, 23, tzinfo=UTC)
SCHEMA = "id INT, date STRING, v STRING"
T = "/data/orders"


def rows(day: str, *ids: int) -> dict[str, Any]:
    return {"kind": "rows", "rows": [[i, day, "x"] for i in ids], "schema": SCHEMA}


def add_column(task_id: str = "alter", table: str = T) -> Any:
    """A schema change: ``ALTER TABLE ... ADD COLUMNS`` through ``DeltaSqlOperator``."""
    from airflow_provider_deltacc.operators import DeltaSqlOperator

    return DeltaSqlOperator(
        task_id=task_id,
        table=table,
        statement="ALTER TABLE {table} ADD COLUMNS (c INT)",
        op_class="schema_changing",
    )


def dag(dag_id: str = "d", **kwargs: Any) -> Any:
    from airflow.sdk import DAG

    settings: dict[str, Any] = {"schedule": None, "start_date": datetime(2026, 1, 1), "max_active_runs": 1}
    return DAG(dag_id=dag_id, **{**settings, **kwargs})


def run(*dags: Any, horizon: timedelta = timedelta(days=7)) -> Analysis:
    return analyse(dags, reference=REFERENCE, horizon=horizon)


def pair(analysis: Analysis, a: str, b: str) -> Finding:
    """The finding of tasks ``a`` and ``b`` (``dag.task`` or bare task ids when unambiguous)."""
    for finding in analysis.findings:
        names = {
            finding.task_a,
            finding.task_b,
            *(t.split(".", 1)[1] for t in (finding.task_a, finding.task_b)),
        }
        if a in names and b in names and (a != b or finding.task_a == finding.task_b):
            return finding
    raise AssertionError(f"no pair {a} x {b} in {[(f.task_a, f.task_b) for f in analysis.findings]}")


def pairs(analysis: Analysis) -> set[frozenset[str]]:
    return {frozenset({f.task_a, f.task_b}) for f in analysis.findings}
