"""The advisor's verdicts for the example DAG's pairs against what real concurrent runs on Delta produce.

For every pair the advisor reports in ``dags/example_advisor_pairs.py`` (each on a table of its own), the
two tasks' job specs (built by the DAG's own operators) run concurrently on a fresh partitioned table with
one forced interleaving: the transaction the advisor names as the loser is held at a gate after it read
its snapshot, the other commits, the held one is released. In-job retries are off (one attempt), so a
conflict shows in the commit report. "will"/"can" (on overlapping data) must end in a real conflict of one
of the predicted exceptions; "cannot" must commit both without any conflict. Only the VACUUM hazard is
not run: it raises no conflict exception by definition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.advisor.analysis import Analysis, analyse
from airflow_provider_deltacc.advisor.findings import Finding, FindingLevel
from airflow_provider_deltacc.advisor.loader import load_dags
from airflow_provider_deltacc.advisor.observed import attach_observed
from airflow_provider_deltacc.conflict_matrix import EXCEPTION_NAMES
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.spark_job.main import run_job
from tests.support.gate import Gate
from tests.support.held import gate_udf, hold
from tests.unit.advisor.test_example_dag import DAG_FILE, EXPECTED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::UserWarning")]

SCHEMA = "id INT, date STRING, v STRING"
DAY1 = "2026-11-01"
GATE_FUNCTION = "advisor_test_gate"
#: The longest wait for the held job to reach the gate, and after its release (a loaded 2-core box).
GATE_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Example:
    dag: Any
    analysis: Analysis
    findings: dict[str, Finding]


@pytest.fixture(scope="module")
def example() -> Example:
    [dag] = load_dags([DAG_FILE])
    analysis = analyse([dag])
    findings = {f.table.rsplit("/advisor_", 1)[1]: f for f in analysis.findings}
    assert {name: f.level for name, f in findings.items()} == EXPECTED
    return Example(dag, analysis, findings)


def _seed(spark: SparkSession, path: str, *, files_per_partition: int) -> None:
    """Rows in date=2026-11-01 (ids 1, 2, then 11, 12) and date=2026-11-02 (3, 4, then 13, 14), one file
    per partition and round."""
    for offset in (0, 10)[:files_per_partition]:
        rows = [(offset + i, "2026-11-01", "seed") for i in (1, 2)] + [
            (offset + i, "2026-11-02", "seed") for i in (3, 4)
        ]
        frame = spark.createDataFrame(rows, SCHEMA).coalesce(1)
        frame.write.format("delta").mode("append").partitionBy("date").save(path)


def _spec(task: Any, table: str) -> dict[str, Any]:
    """The job spec the DAG's operator would submit, on ``table``, with one attempt (no in-job retry), as the
    JSON object a driver reads (the held task's condition is edited in it)."""
    from airflow_provider_deltacc.contract.spec_build import job_spec
    from airflow_provider_deltacc.contract.spec_json import spec_to_json

    typed = job_spec(
        operation=task.operation,
        table=table,
        options=task.build_options({}),
        source=task.build_source({}),
    )
    return {**spec_to_json(typed), "commit_retry": {"max_attempts": 1}}


def _operators(dag: Any, finding: Finding) -> tuple[Any, Any]:
    first = dag.get_task(finding.task_a.split(".", 1)[1])
    if finding.task_a != finding.task_b:
        return first, dag.get_task(finding.task_b.split(".", 1)[1])
    sources = first.expand_input.value["source"]
    return first.unmap({"source": sources[0]}), first.unmap({"source": sources[1]})


def _holdable(task: Any) -> bool:
    return task.operation in ("append", "merge", "update", "delete")


@contextmanager
def _gate_in_child_sessions(monkeypatch: pytest.MonkeyPatch, gate: Gate, only: int) -> Iterator[None]:
    """Operations run in a child session, which does not see the parent's functions: register the gate
    function in every child the engine creates during the block. Only the row ``only`` blocks, so the
    held job occupies one task slot and the rival can run."""
    import airflow_provider_deltacc.engine.run as engine_run

    original = engine_run.isolated_session

    def with_gate(spark: SparkSession, conf: Any) -> SparkSession:
        child = original(spark, conf)
        gate_udf(child, gate, name=GATE_FUNCTION, only=only)
        return child

    monkeypatch.setattr(engine_run, "isolated_session", with_gate)
    yield


def _run_pair(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: Any, other: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    table = str(tmp_path / "table")
    # OPTIMIZE only rewrites a partition with more than one file.
    _seed(spark, table, files_per_partition=2 if "optimize" in (held.operation, other.operation) else 1)
    gate = Gate(tmp_path, timeout_s=GATE_TIMEOUT_S)
    held_spec = _spec(held, table)
    hook: Callable[[DataFrame, int], DataFrame] | None = None
    if held.operation in ("update", "delete"):
        held_spec["options"]["condition"] = f"{GATE_FUNCTION}(id)"
    else:

        def hook(frame: DataFrame, attempt: int) -> DataFrame:
            return frame.coalesce(1).where(gate.column("id"))

    outcome: dict[str, Any] = {}

    def run_held() -> None:
        outcome["report"] = run_job(held_spec, spark, source_hook=hook)[1]

    # The first id of the held task's partition (see _seed), for a gate in an UPDATE/DELETE condition.
    days = [spec["date"] for spec in held_spec["options"].get("partition_values") or [{"date": DAY1}]]
    only = 1 if DAY1 in days else 3
    try:
        with _gate_in_child_sessions(monkeypatch, gate, only), hold(gate, run_held):
            _, rival = run_job(_spec(other, table), spark)
    finally:
        gate.release()
    return outcome["report"], rival


def _as_pushed(report: dict[str, Any], task_key: str, table: str) -> dict[str, Any]:
    """The report as the task would push it to XCom, run on the DAG's own table (not the test's copy)."""
    dag_id, task_id = task_key.split(".", 1)
    return {**report, "dag_id": dag_id, "task_id": task_id, "table": table}


def _conflicts(report: dict[str, Any]) -> list[str]:
    kinds = [a["conflict"]["kind"] for a in report.get("attempts") or [] if a.get("conflict")]
    return [EXCEPTION_NAMES[ConflictKind(kind)] for kind in kinds]


@pytest.mark.parametrize(
    "name", [name for name, level in EXPECTED.items() if level is not FindingLevel.HAZARD]
)
def test_the_verdict_matches_a_real_concurrent_run(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example: Example, name: str
) -> None:
    finding = example.findings[name]
    first, second = _operators(example.dag, finding)
    pair = [(first, second, finding.task_a, finding.task_b), (second, first, finding.task_b, finding.task_a)]
    if finding.level is not FindingLevel.CANNOT:
        pair = [p for p in pair if p[2] in finding.losers] or pair
    held, other, held_key, other_key = next(p for p in pair if _holdable(p[0]))

    held_report, rival = _run_pair(spark, tmp_path, monkeypatch, held, other)

    assert rival["status"] == "committed", rival.get("summary")
    assert not _conflicts(rival)
    if finding.level is FindingLevel.CANNOT:
        assert held_report["status"] == "committed", held_report.get("summary")
        assert not _conflicts(held_report), f"predicted cannot, but: {held_report.get('summary')}"
    else:
        seen = _conflicts(held_report)
        assert seen, (
            f"predicted {finding.level.value}, but the held task committed: {held_report.get('summary')}"
        )
        assert set(seen) <= set(finding.exceptions), (seen, finding.exceptions)
        assert held_report["status"] in ("conflict_exhausted", "conflict_fatal")

    # The same reports, as the operators would push them to XCom, read back by the observed step.
    reports = [_as_pushed(held_report, held_key, finding.table), _as_pushed(rival, other_key, finding.table)]
    observed, unmatched = attach_observed(example.analysis, reports)
    [seen_finding] = [f for f in observed.findings if f.table == finding.table]
    assert unmatched == []
    expected_conflicts = 0 if finding.level is FindingLevel.CANNOT else 1
    assert seen_finding.observed["conflicts"] == expected_conflicts, seen_finding.observed
