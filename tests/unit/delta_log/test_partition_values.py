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

    def recording(values_map: Any, counted: Any, columns: tuple[str, ...]) -> Any:
        found = columns_in_one_order(values_map, counted, columns)
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


def _dictionary_adds(
    maps: list[list[tuple[str, str | None]]], *, key_dictionary: list[str] | None = None
) -> pa.StructArray:
    """``_adds`` with the maps' keys and values as dictionaries, as the checkpoint reader reads them; the
    keys' dictionary may be given (in any order, even naming a key twice)."""
    offsets = [0]
    for entries in maps:
        offsets.append(offsets[-1] + len(entries))
    keys = [key for entries in maps for key, _ in entries]
    dictionary = key_dictionary or sorted(set(keys))
    key_array = pa.DictionaryArray.from_arrays(
        pa.array([dictionary.index(k) for k in keys], pa.int32()), dictionary
    )
    items = pa.array([value for entries in maps for _, value in entries], pa.string()).dictionary_encode()
    values_map = pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), key_array, items)
    paths = pa.array([f"f{i}.parquet" for i in range(len(maps))])
    return pa.StructArray.from_arrays([paths, values_map], ["path", "partitionValues"])


@pytest.mark.parametrize(
    ("maps", "refused"),
    [
        (
            [[("day", "a"), ("n", "1")], [("day", "b"), ("n", None)], [("day", "a"), ("n", "1")]],
            [False, False],
        ),
        ([[("n", "1"), ("day", "a")], [("n", "2"), ("day", "a")]], [False, False]),
        ([[("day", "a"), ("n", "1")], [("n", "2"), ("day", "b")]], [True, False]),  # one file left: one order
        ([[("day", "a"), ("n", "1")], [("day", "b")]], [True, True]),
    ],
    ids=["one-order", "first-files-order", "another-order", "missing"],
)
def test_keys_and_values_read_as_dictionaries_give_the_same_answer(
    maps: list[list[tuple[str, str | None]]], refused: list[bool], entry_by_entry: list[bool]
) -> None:
    columns = ("day", "n")
    assert distinct_values(_dictionary_adds(maps), columns, set()) == _expected(maps, columns)
    assert distinct_values(_dictionary_adds(maps), columns, {"f0.parquet"}) == _expected(maps[1:], columns)
    assert entry_by_entry == refused


def test_one_partition_column_read_as_a_dictionary(entry_by_entry: list[bool]) -> None:
    maps = [[("day", "a")], [("day", None)], [("day", "a")], [("day", "b")]]
    assert distinct_values(_dictionary_adds(maps), ("day",), set()) == {("a",), (None,), ("b",)}
    assert distinct_values(_dictionary_adds(maps), ("n",), set()) == {(None,)}  # not the table's column
    # The removed files' entries are in the maps still, so the values are taken at the counted files only.
    assert distinct_values(_dictionary_adds(maps), ("day",), {"f1.parquet", "f3.parquet"}) == {("a",)}
    assert entry_by_entry == [False, True, False]


def test_a_key_dictionary_naming_a_key_twice_is_read_entry_by_entry(entry_by_entry: list[bool]) -> None:
    maps = [[("day", "a")], [("day", "b")]]
    adds = _dictionary_adds(maps, key_dictionary=["day", "day"])
    assert distinct_values(adds, ("day",), set()) == {("a",), ("b",)}
    assert entry_by_entry == [True]


def test_rows_of_other_actions_are_null_and_do_not_count(entry_by_entry: list[bool]) -> None:
    maps = [[("day", "a")], [("day", "b")], [("day", "c")]]
    adds = _adds(maps)
    with_nulls = pa.StructArray.from_arrays(
        [adds.field("path"), adds.field("partitionValues")],
        ["path", "partitionValues"],
        mask=pa.array([False, True, False]),
    )
    assert distinct_values(with_nulls, ("day",), set()) == {("a",), ("c",)}
    assert distinct_values(with_nulls, ("day",), {"f0.parquet", "f2.parquet"}) == set()
    assert entry_by_entry == [False]
