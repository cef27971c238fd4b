"""The provider's Delta-log reader on tables delta-spark wrote: every answer (version, protocol, metadata,
schema, txn versions, partitions, commit infos) equals delta-rs's, from a classic checkpoint holding
deletion vectors and removed files, with files removed and written again and a metadata change after it;
and from a v2 checkpoint whose file actions sit in sidecars, its top-level file in parquet and in JSON.

The unit tests read tables delta-rs wrote (past ten checkpoints, multi-part, stale ``_last_checkpoint``) and
v2 checkpoints made by hand (``tests/unit/delta_log/test_log_reader.py``); these are the checkpoints a Spark
pipeline's table has. A checkpoint costs delta-spark seconds here, so each table has one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log import checkpoint as checkpoints
from airflow_provider_deltacc.delta_log.checksum import read_checksum
from airflow_provider_deltacc.delta_log.fast_path import find_committed_version
from airflow_provider_deltacc.delta_log.log_reader import LogState, read_log_state
from airflow_provider_deltacc.delta_log.log_storage import LocalLogFiles
from airflow_provider_deltacc.delta_log.partition_pages import single_column_values
from airflow_provider_deltacc.delta_log.partition_values import distinct_values
from airflow_provider_deltacc.delta_log.sparse_rows import sparse_struct_rows
from airflow_provider_deltacc.delta_log.txn_commit import version_by_checksums
from airflow_provider_deltacc.engine.confs import session_confs
from tests.support.log_reader_checks import assert_reads_as_delta_rs, day, partition_set

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

APPS = ("ingest/orders/0", "ingest/refunds/0", "never/recorded")
DAYS = 4


def _create(spark: SparkSession, table: str, properties: dict[str, str]) -> None:
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    spark.sql(
        f"CREATE TABLE delta.`{table}` (id BIGINT, day STRING) USING delta PARTITIONED BY (day) "
        f"TBLPROPERTIES ({listed})"
    )


def _append(spark: SparkSession, table: str, i: int) -> None:
    """Two rows of one day under txn identity ``APPS[i % 2]`` version ``i``: one file a DELETE of one of the
    rows leaves with a deletion vector."""
    rows = spark.createDataFrame([(i, day(i % DAYS)), (100 + i, day(i % DAYS))], "id BIGINT, day STRING")
    writer = rows.coalesce(1).write.format("delta").mode("append")
    writer.option("txnAppId", APPS[i % 2]).option("txnVersion", i).save(table)


def _log(table: str) -> Path:
    return Path(table) / "_delta_log"


def _last_checkpoint_version(table: str) -> int:
    return int(json.loads((_log(table) / "_last_checkpoint").read_text())["version"])


def test_a_checkpoint_with_deletion_vectors_and_removes_on_both_sides_reads_as_delta_rs_reads_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = str(tmp_path / "orders")
    _create(spark, table, {"delta.checkpointInterval": "6", "delta.enableDeletionVectors": "true"})
    for i in range(1, 5):
        _append(spark, table, i)
    spark.sql(f"DELETE FROM delta.`{table}` WHERE id = 103")  # one row of a file: a deletion vector
    spark.sql(f"DELETE FROM delta.`{table}` WHERE day = '{day(0)}'")  # a day's files, then the checkpoint
    # A metadata change after the checkpoint; at its new interval, nothing after it is checkpointed.
    spark.sql(
        f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES "
        "('delta.checkpointInterval' = '100', 'owner.team' = 'ingest')"
    )
    spark.sql(f"DELETE FROM delta.`{table}` WHERE day = '{day(1)}'")  # a day removed after the checkpoint
    _append(spark, table, 5)  # and written again, with a txn version newer than the checkpoint's

    [checkpoint] = _log(table).glob("*.checkpoint.parquet")
    adds = pq.read_table(checkpoint, columns=["add"]).column("add").combine_chunks()
    assert adds.field("deletionVector").is_valid().true_count == 1  # the checkpoint holds the vector
    _assert_pages_decoded(checkpoint)
    state = assert_reads_as_delta_rs(table, APPS)
    assert state.version == 9 and _last_checkpoint_version(table) == 6
    assert "deletionVectors" in state.reader_features
    assert state.configuration["owner.team"] == "ingest"
    assert state.txn_versions == {APPS[1]: 5, APPS[0]: 4}
    assert partition_set(state) == {frozenset({("day", day(d))}) for d in (1, 2, 3)}
    _assert_checksum_answers(table, state)
    # The checksums delta-spark wrote beside every commit (DELETEs and ALTER included) point a duplicate to
    # the commit that recorded its identity.
    files = LocalLogFiles(str(_log(table)))
    assert [version_by_checksums(files, APPS[i % 2], i, state.version) for i in (1, 4, 5)] == [1, 4, 9]
    assert find_committed_version(Table(table), APPS[0], 4, state.version) == 4


@pytest.mark.parametrize("top_level", ["parquet", "json"])
def test_a_v2_checkpoint_with_its_files_in_sidecars_reads_as_delta_rs_reads_it(
    spark: SparkSession, tmp_path: Path, top_level: str
) -> None:
    table = str(tmp_path / "orders")
    # A part size of one action: delta-spark writes the file actions into several sidecars.
    v2_conf = {
        "spark.databricks.delta.checkpointV2.topLevelFileFormat": top_level,
        "spark.databricks.delta.checkpoint.partSize": "1",
    }
    with session_confs(spark, v2_conf):
        _create(spark, table, {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "3"})
        for i in range(1, 5):
            _append(spark, table, i)

    [top] = _log(table).glob(f"00000000000000000003.checkpoint.*.{top_level}")
    sidecars = list((_log(table) / "_sidecars").iterdir())
    assert len(sidecars) > 1, sidecars
    if top_level == "parquet":
        _assert_pages_decoded(top)
    state = assert_reads_as_delta_rs(table, APPS)
    assert state.version == 4 and _last_checkpoint_version(table) == 3, top.name
    assert "v2Checkpoint" in state.reader_features
    assert state.txn_versions == {APPS[1]: 3, APPS[0]: 4}
    assert len(state.partitions or ()) == DAYS
    _assert_checksum_answers(table, state)


def test_a_checkpoint_of_many_files_gives_its_partitions_from_its_pages(
    spark: SparkSession, tmp_path: Path
) -> None:
    """parquet-mr dictionary-encodes a partition-values map once a checkpoint holds more than a handful of
    files (a few it writes plain, which the reader leaves to pyarrow)."""
    table = str(tmp_path / "events")
    _create(spark, table, {"delta.checkpointInterval": "2"})
    for i in (1, 2):
        rows = spark.range(300).selectExpr("id", f"concat('2026-11-0', cast(id % 5 + {i} as string)) as day")
        rows.repartition(30).write.format("delta").mode("append").save(table)
    [checkpoint] = _log(table).glob("*.checkpoint.parquet")
    _assert_partition_pages(checkpoint)
    state = assert_reads_as_delta_rs(table, APPS)
    assert partition_set(state) == {frozenset({("day", f"2026-11-0{d}")}) for d in range(1, 7)}


def _assert_pages_decoded(path: Path) -> None:
    """delta-spark's checkpoint pages are ones the reader decodes itself (not left to pyarrow), into the
    rows pyarrow decodes."""
    source = pa.OSFile(str(path), "rb")
    parquet = pq.ParquetFile(source)
    schema, groups = parquet.schema_arrow, list(range(parquet.num_row_groups))
    fields = {
        column: [path.split(".", 1)[1] for path in checkpoints._present_fields(schema, column, names)]
        for column, names in checkpoints.STATE_FIELDS.items()
        if column in schema.names and column != "sidecar"
    }
    paths = [f"{column}.{name}" for column, names in fields.items() for name in names]
    decoded = checkpoints._decoded_rows(parquet, groups, paths)
    assert decoded["protocol"] and decoded["metaData"]
    assert sparse_struct_rows(parquet, source, groups, fields) == decoded


def _assert_partition_pages(path: Path) -> None:
    """delta-spark's partition-values maps are ones the reader reads from their pages (not left to pyarrow),
    into the distinct values pyarrow's full decoding gives."""
    source = pa.OSFile(str(path), "rb")
    parquet = pq.ParquetFile(source)
    adds = parquet.read(columns=["add.partitionValues"]).column("add")
    pages = single_column_values(parquet, source)
    assert pages is not None and pages[0] == "day"
    assert {(value,) for value in pages[1]} == distinct_values(adds, ("day",), set())


def _assert_checksum_answers(table: str, state: LogState) -> None:
    """delta-spark left the latest version's checksum, and it alone answers a read without the partitions
    (its answers were compared with delta-rs's by ``assert_reads_as_delta_rs``)."""
    checksum = read_checksum(LocalLogFiles(str(_log(table))), state.version)
    assert checksum is not None and checksum.txns is not None
    assert {app: checksum.txns[app] for app in state.txn_versions} == state.txn_versions
    [checkpoint, *_] = sorted(_log(table).glob(f"{_last_checkpoint_version(table):020d}.checkpoint.*"))
    checkpoint.write_bytes(b"not a checkpoint")  # a read of the checkpoint would fail now
    light = read_log_state(Table(table), app_ids=APPS)
    assert (light.version, light.txn_versions, light.schema_string) == (
        state.version,
        state.txn_versions,
        state.schema_string,
    )
