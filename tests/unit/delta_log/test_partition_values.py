"""The distinct partition values of a checkpoint's ``add`` column: the column-wise path (every file names
each column once, in one order) and the entry-by-entry path give the same answer, Delta's meaning included
(a column a file does not name is null), on sliced arrays and on chunks."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_deltacc.delta_log import partition_values
from airflow_provider_deltacc.delta_log.partition_values import distinct_values, values_of

pytestmark = pytest.mark.unit

MAP = pa.map_(pa.string(), pa.string())


def _adds(maps: list[list[tuple[str, str | None]]], paths: list[str] | None = None) -> pa.StructArray:
    paths = paths or [f"f{i}.parquet" for i in range(len(maps))]
    return pa.StructArray.from_arrays([pa.array(paths), pa.array(maps, MAP)], ["path", "partitionValues"])


def _expected(maps: list[list[tuple[str, str | None]]], columns: tuple[str, ...]) -> set[Any]:
    return {values_of(dict(m), columns) for m in maps}


@pytest.fixture
def entry_by_entry(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per call, whether the column-wise path was refused (and the maps read entry by entry)."""
    refused: list[bool] = []
    columns_in_one_order = partition_values._columns_in_one_order

    def recording(values_map: Any, columns: tuple[str, ...]) -> Any:
        found = columns_in_one_order(values_map, columns)
        refused.append(found is None)
        return found

    monkeypatch.setattr(partition_values, "_columns_in_one_order", recording)
    return refused


def test_one_column_with_a_null_partition(entry_by_entry: list[bool]) -> None:
    maps = [[("day", "2026-11-01")], [("day", None)], [("day", "2026-11-01")], [("day", "2026-11-02")]]
    assert distinct_values(_adds(maps), ("day",), set()) == {("2026-11-01",), (None,), ("2026-11-02",)}
    assert entry_by_entry == [False]


def test_two_columns_in_the_order_of_the_first_file_whatever_the_tables_order(
    entry_by_entry: list[bool],
) -> None:
    maps = [[("n", "1"), ("day", "a")], [("n", "2"), ("day", "a")], [("n", "1"), ("day", "a")]]
    assert distinct_values(_adds(maps), ("day", "n"), set()) == {("a", "1"), ("a", "2")}
    assert entry_by_entry == [False]


@pytest.mark.parametrize(
    "maps",
    [
        [[("day", "a"), ("n", "1")], [("n", "2"), ("day", "b")]],  # another order in one file
        [[("day", "a"), ("n", "1")], [("day", "b")]],  # a file lacking a column: null
        [[("day", "a"), ("n", "1")], [("day", "b"), ("x", "1")]],  # a column the table does not have
    ],
    ids=["order", "missing", "other"],
)
def test_other_shapes_are_read_entry_by_entry_with_deltas_meaning(
    maps: list[list[tuple[str, str | None]]], entry_by_entry: list[bool]
) -> None:
    columns = ("day", "n")
    assert distinct_values(_adds(maps), columns, set()) == _expected(maps, columns)
    assert entry_by_entry == [True]


def test_removed_files_do_not_count_and_a_slice_reads_its_own_rows() -> None:
    maps = [[("day", d), ("n", n)] for d, n in (("a", "1"), ("b", "1"), ("c", "2"), ("d", "2"), ("e", "3"))]
    adds = _adds(maps)
    kept = {("a", "1"), ("c", "2"), ("d", "2"), ("e", "3")}
    assert distinct_values(adds, ("day", "n"), {"f1.parquet"}) == kept
    assert distinct_values(adds.slice(2, 2), ("day", "n"), set()) == {("c", "2"), ("d", "2")}
    assert distinct_values(adds.slice(3, 2), ("day",), set()) == {("d",), ("e",)}  # "n" is not a column
    chunked = pa.chunked_array([adds.slice(0, 2), adds.slice(4, 1)])
    assert distinct_values(chunked, ("day", "n"), set()) == {("a", "1"), ("b", "1"), ("e", "3")}


def test_no_rows_and_no_columns() -> None:
    assert distinct_values(_adds([]), ("day",), set()) == set()
    assert distinct_values(_adds([[("day", "a")]]), ("day",), {"f0.parquet"}) == set()
    assert distinct_values(_adds([[]]), (), set()) == {()}
