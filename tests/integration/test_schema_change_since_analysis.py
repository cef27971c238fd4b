"""A MERGE planned before a concurrent ADD COLUMNS: Delta fails it as its transaction starts, the commit
loop takes that for the metadata conflict it is, and the re-planned attempt commits.

Delta 4.4's MergeIntoCommand compares the schema it was analysed against with the snapshot its
transaction reads, and raises ``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS`` rather than a MetadataChangedException
at commit. Under load the window (handle built, MERGE not yet started) is long enough for a schema change
to land in it; the chaos run saw it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.occ import classify, run_commit_loop
from airflow_provider_deltacc.occ.work_result import WorkResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def _table(spark: SparkSession, path: str) -> None:
    spark.createDataFrame([(1, "a", 10), (2, "b", 20)], "id INT, p STRING, v INT").write.format(
        "delta"
    ).partitionBy("p").save(path)


def _merge_builder(spark: SparkSession, path: str) -> Any:
    from delta.tables import DeltaTable

    source = spark.createDataFrame([(1, "a", 5)], "id INT, p STRING, v INT")
    return (
        DeltaTable.forPath(spark, path)
        .alias("t")
        .merge(source.alias("s"), "t.id = s.id AND t.p = s.p")
        .whenMatchedUpdate(set={"v": "t.v + s.v"})
    )


def test_real_schema_change_since_analysis_is_a_metadata_conflict(spark: SparkSession, tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    _table(spark, path)
    planned = _merge_builder(spark, path)
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (memo STRING)")
    with pytest.raises(Exception) as caught:
        planned.execute()
    assert "DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS" in str(caught.value)
    conflict = classify(caught.value)
    assert conflict is not None and conflict.kind is ConflictKind.METADATA_CHANGED


def test_commit_loop_replans_the_merge_and_commits_once(spark: SparkSession, tmp_path: Any) -> None:
    from delta.tables import DeltaTable

    path = str(tmp_path / "t")
    _table(spark, path)

    def work(attempt: int) -> WorkResult:
        builder = _merge_builder(spark, path)  # every attempt plans afresh
        if attempt == 1:
            spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (memo STRING)")
        builder.execute()
        return WorkResult(table_version=int(DeltaTable.forPath(spark, path).history(1).first()["version"]))

    report = run_commit_loop(
        work,
        operation="MERGE",
        table=path,
        op_class=OperationClass.READ_MODIFY_WRITE,
        policy=CommitRetryPolicy(max_attempts=3, min_wait_s=0.01, max_wait_s=0.05),
        owns_txn_identity=False,
        logger=logging.getLogger("test"),
        sleep=lambda _: None,
    )
    assert report.status == "committed"
    assert [a.conflict.kind if a.conflict else None for a in report.attempts] == [
        ConflictKind.METADATA_CHANGED,
        None,
    ]
    rows = {r["id"]: r["v"] for r in spark.read.format("delta").load(path).collect()}
    assert rows == {1: 15, 2: 20}  # applied exactly once, by the re-planned attempt
