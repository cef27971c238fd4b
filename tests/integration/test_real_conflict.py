"""The jars, Delta and its conflict detection work: two real transactions collide on one partition."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.gate import Gate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def test_merge_held_after_snapshot_read_loses_to_concurrent_append(
    spark: SparkSession, table_path: str, tmp_path: Path
) -> None:
    from delta.exceptions import ConcurrentAppendException
    from delta.tables import DeltaTable

    rows = [(i, "2026-11-20", f"v{i}") for i in range(4)]
    spark.createDataFrame(rows, "id INT, date STRING, value STRING").write.format("delta").partitionBy(
        "date"
    ).save(table_path)
    version_before = DeltaTable.forPath(spark, table_path).history(1).collect()[0]["version"]

    gate = Gate(tmp_path)
    source = (
        spark.createDataFrame([(1, "2026-11-20", "updated")], "id INT, date STRING, value STRING")
        .coalesce(1)
        .where(gate.column("id"))
    )
    outcome: dict[str, BaseException | None] = {}

    def merge() -> None:
        try:
            (
                DeltaTable.forPath(spark, table_path)
                .alias("t")
                .merge(source.alias("s"), "t.id = s.id AND t.date = s.date")
                .whenMatchedUpdateAll()
                .whenNotMatchedInsertAll()
                .execute()
            )
            outcome["merge"] = None
        except BaseException as exc:  # the assertion below inspects it
            outcome["merge"] = exc

    merger = threading.Thread(target=merge)
    merger.start()
    gate.wait_entered()
    spark.createDataFrame([(99, "2026-11-20", "late")], "id INT, date STRING, value STRING").write.format(
        "delta"
    ).mode("append").save(table_path)
    gate.release()
    merger.join(timeout=180)

    assert not merger.is_alive()
    assert isinstance(outcome["merge"], ConcurrentAppendException), repr(outcome.get("merge"))
    assert "DELTA_CONCURRENT_APPEND" in str(outcome["merge"])
    history = DeltaTable.forPath(spark, table_path).history().collect()
    assert history[0]["operation"] == "WRITE"
    assert history[0]["version"] == version_before + 1, "only the append committed"
    values = {r["id"]: r["value"] for r in spark.read.format("delta").load(table_path).collect()}
    assert values[1] == "v1" and values[99] == "late"
