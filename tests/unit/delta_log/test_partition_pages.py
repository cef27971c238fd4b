"""A table's one partition column's distinct values, read from the pages of a checkpoint's
``add.partitionValues`` without a value per file, equal what pyarrow's full decoding gives, for every way a
writer lays them out; any other shape is left to pyarrow."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_deltacc.delta_log import parquet_pages
from airflow_provider_deltacc.delta_log.parquet_pages import Packed, lanes_equal, lanes_holding
from airflow_provider_deltacc.delta_log.partition_pages import MAX_DICTIONARY, single_column_values
from airflow_provider_deltacc.delta_log.partition_values import distinct_values

pytestmark = pytest.mark.unit


def _schema(map_nullable: bool) -> pa.Schema:
    add = pa.struct(
        [
            pa.field("path", pa.string(), nullable=False),
            pa.field("partitionValues", pa.map_(pa.string(), pa.string()), nullable=map_nullable),
        ]
    )
    return pa.schema([pa.field("add", add), pa.field("txn", pa.struct([pa.field("appId", pa.string())]))])


def _rows(seed: int, files: int, distinct: int, *, nulls: bool, ordered: bool) -> list[dict[str, Any]]:
    """``files`` adds partitioned by ``day`` over ``distinct`` values (with, if ``nulls``, files whose map
    holds a null or lacks the column), rows of another action among them."""
    chance = random.Random(seed)
    values = [f"2026-11-{i:03d}-ü" for i in range(distinct)]
    rows: list[dict[str, Any]] = []
    for i in range(files):
        maps: list[Any] = [[("day", chance.choice(values))]]
        if nulls:
            maps += [[("day", None)], []]
        rows.append({"add": {"path": f"f{i}", "partitionValues": chance.choice(maps) if i % 7 else maps[0]}})
    if ordered:
        rows.sort(key=lambda row: str(row["add"]["partitionValues"]))
    for _ in range(chance.randrange(1, 5)):
        rows.insert(chance.randrange(len(rows) + 1), {"txn": {"appId": "a"}})
    return rows


def _both(path: Path) -> tuple[Any, set[Any]]:
    """What the pages give, and the distinct values pyarrow's full decoding gives."""
    source = pa.OSFile(str(path), "rb")
    parquet = pq.ParquetFile(source)
    adds = parquet.read(columns=["add.partitionValues"]).column("add")
    return single_column_values(parquet, source), distinct_values(adds, ("day",), set())


WRITERS = {
    "dictionary-v1-snappy": {"compression": "snappy"},
    "dictionary-v2-zstd-small-pages": {
        "data_page_version": "2.0",
        "compression": "zstd",
        "data_page_size": 256,
    },
    "dictionary-gzip-row-groups": {"compression": "gzip", "row_group_size": 333},
    "uncompressed": {"compression": "none"},
}


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize(
    ("distinct", "nulls", "ordered", "map_nullable"),
    [
        (1, False, False, False),
        (3, True, False, True),
        (4, False, False, False),
        (17, True, True, False),
        (MAX_DICTIONARY, True, False, True),
    ],
)
def test_the_pages_give_the_distinct_values_pyarrow_decodes(
    tmp_path: Path, writer: str, distinct: int, nulls: bool, ordered: bool, map_nullable: bool
) -> None:
    rows = _rows(distinct, 3000, distinct, nulls=nulls, ordered=ordered)
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema(map_nullable)), path, **WRITERS[writer])
    pages, decoded = _both(path)
    assert pages is not None, "read from the pages, not left to pyarrow"
    column, values = pages
    assert column == "day"
    assert {(value,) for value in values} == decoded
    assert (None in values) == nulls


@pytest.mark.parametrize(
    ("rows", "options"),
    [
        (_rows(1, 500, MAX_DICTIONARY + 1, nulls=False, ordered=False), {}),  # a dictionary too big to search
        (_rows(2, 500, 4, nulls=False, ordered=False), {"use_dictionary": False}),  # plain pages
        ([{"add": {"path": "a", "partitionValues": [("day", "1"), ("region", "eu")]}}], {}),  # two columns
        (
            [{"add": {"path": "a", "partitionValues": [("day", "1"), ("day", "2")]}}],
            {},
        ),  # a column named twice
        (
            [
                {"add": {"path": "a", "partitionValues": [("day", "1")]}},
                {"add": {"path": "b", "partitionValues": [("region", "eu")]}},
            ],
            {},
        ),  # two keys among the files
        ([{"txn": {"appId": "a"}}], {}),  # no file
        ([{"add": {"path": "a", "partitionValues": []}}], {}),  # an unpartitioned table
    ],
    ids=["dictionary-too-big", "plain", "two-columns", "named-twice", "two-keys", "no-file", "unpartitioned"],
)
def test_any_other_shape_is_left_to_pyarrow(tmp_path: Path, rows: list[dict[str, Any]], options: Any) -> None:
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema(False)), path, **options)
    source = pa.OSFile(str(path), "rb")
    assert single_column_values(pq.ParquetFile(source), source) is None


@pytest.mark.parametrize("width", [1, 2, 3, 5, 6, 8, 11])
def test_a_bit_packed_run_is_searched_and_counted_without_unpacking_it(width: int) -> None:
    chance = random.Random(width)
    for count in (1, 7, 8, 9, 64, 513):
        lanes = [chance.randrange(1 << width) for _ in range(count)]
        if chance.random() < 0.5:  # a run of few distinct values
            lanes = [lane % 3 for lane in lanes]
        run = Packed(count, width, sum(lane << (i * width) for i, lane in enumerate(lanes)))
        candidates = set(range(min(1 << width, 40) + 5))  # some wider than a lane
        assert lanes_holding(run, candidates) == set(lanes) & candidates
        for value in (0, 1, 2, (1 << width) - 1, 1 << width):
            assert lanes_equal(run, value) == lanes.count(value)
    assert lanes_holding(Packed(5, 0, 0), {0, 1}) == {0}  # a one-entry dictionary's indices take no bits
    assert (lanes_equal(Packed(5, 0, 0), 0), lanes_equal(Packed(5, 0, 0), 1)) == (5, 0)
    assert lanes_holding([4, 2], {1, 2}) == {2} and lanes_equal([4, 2], 2) == 4  # an RLE run


def test_a_table_of_two_partition_columns_is_declined_before_a_level_is_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"add": {"path": f"f{i}", "partitionValues": [("day", f"d{i % 4}"), ("region", "eu")]}}
        for i in range(5000)
    ]
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema(False)), path)
    unpacked: list[int] = []
    real = parquet_pages._hybrid

    def counting(data: bytes, position: int, width: int, count: int) -> list[list[int]]:
        unpacked.append(count)
        return real(data, position, width, count)

    monkeypatch.setattr(parquet_pages, "_hybrid", counting)
    source = pa.OSFile(str(path), "rb")
    assert single_column_values(pq.ParquetFile(source), source) is None
    assert unpacked == []


def test_files_among_other_actions_rows_are_found_from_their_levels_runs(tmp_path: Path) -> None:
    """delta-spark's checkpoints put removed files' rows among the added ones: the value leaf's levels are
    then bit-packed, and are searched, not unpacked."""
    rows: list[dict[str, Any]] = []
    for i in range(4000):
        rows.append({"add": {"path": f"f{i}", "partitionValues": [("day", f"d{i % 5}")] if i % 11 else []}})
        rows.append({"txn": {"appId": "removed-file-row"}})
    path = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema(False)), path)
    pages, decoded = _both(path)
    assert pages is not None and {(value,) for value in pages[1]} == decoded
    assert None in pages[1]
