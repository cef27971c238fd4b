"""The distinct partition values of a checkpoint's files, computed in arrow without a row per file in Python.

A checkpoint's ``add.partitionValues`` is a map per file (column name to value, null for a null partition).
Every writer gives each file one entry per partition column, in the same order for every file: then the
values of column ``k`` are the entries at each file's offset plus ``k``, taken in one step, and the distinct
values are a hash of one column (``unique``) or a group-by of several. Any other shape (a file lacking a
column, or the columns in another order in some files) is read entry by entry, with Delta's meaning: a
column a file does not name is null.

The rows that count (adds, less the removed files) are a mask over the offsets: filtering the ``add``
structs themselves copies every map. Keys and values read as dictionaries
(:func:`~airflow_provider_deltacc.delta_log.checkpoint.read_checkpoint`) are compared and hashed by
their indices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PartitionValues = tuple[str | None, ...]


def values_of(values: Mapping[str, Any], columns: tuple[str, ...]) -> PartitionValues:
    """One file's partition values (its ``partitionValues`` map) in ``columns``' order; a column the map
    does not name is null.

    :param values: the file's ``partitionValues``.
    :param columns: the table's partition columns.
    """
    return tuple(None if values.get(c) is None else str(values[c]) for c in columns)


def distinct_values(adds: Any, columns: tuple[str, ...], removed: set[str]) -> set[PartitionValues]:
    """The distinct partition values of a checkpoint's ``add`` column.

    :param adds: the ``add`` struct array (or chunked array) with ``partitionValues``, and ``path`` when
        ``removed`` is not empty; a null row is not an add (the checkpoint's row of another action).
    :param columns: the table's partition columns.
    :param removed: the paths of files a later commit removed: their values do not count.
    """
    import pyarrow as pa

    if isinstance(adds, pa.ChunkedArray):  # chunk by chunk: combining them copies every map
        return set().union(*(_distinct_values(chunk, columns, removed) for chunk in adds.chunks))
    return _distinct_values(adds, columns, removed)


def _distinct_values(adds: Any, columns: tuple[str, ...], removed: set[str]) -> set[PartitionValues]:
    import pyarrow as pa
    import pyarrow.compute as pc

    counted = None if not adds.null_count else pc.is_valid(adds)  # None: every row
    if removed:
        kept = pc.invert(pc.is_in(adds.field("path"), value_set=pa.array(sorted(removed))).fill_null(False))
        counted = kept if counted is None else pc.and_(counted, kept)
    if not (len(adds) if counted is None else counted.true_count):
        return set()
    if not columns:
        return {()}
    values_map = adds.field("partitionValues")
    per_column = _columns_in_one_order(values_map, counted, columns)
    if per_column is None:
        maps = values_map if counted is None else values_map.filter(counted)
        return {values_of(dict(m), columns) for m in maps.to_pylist()}
    if len(columns) == 1:
        return {(value,) for value in pc.unique(per_column[columns[0]]).to_pylist()}
    grouped = pa.table(per_column).group_by(list(columns)).aggregate([])
    return set(zip(*(grouped.column(c).to_pylist() for c in columns), strict=True))


def _columns_in_one_order(
    values_map: Any, counted: Any | None, columns: tuple[str, ...]
) -> dict[str, Any] | None:
    """Each column's values, one per counted file (``counted``: a mask, or None for every one), when every
    counted file's map names each column once and in the same order as the first one's; None otherwise."""
    import pyarrow.compute as pc

    # Offsets into the map's whole entries: a sliced array's first map need not start at 0.
    offsets = values_map.offsets
    starts, ends = offsets[:-1], offsets[1:]
    if counted is not None:
        starts, ends = pc.filter(starts, counted), pc.filter(ends, counted)
    counts = pc.min_max(pc.subtract(ends, starts))
    if counts["min"].as_py() != len(columns) or counts["max"].as_py() != len(columns):
        return None
    keys, items = values_map.keys, values_map.items
    order = [keys[starts[0].as_py() + k].as_py() for k in range(len(columns))]
    if sorted(order) != sorted(columns):
        return None
    if len(order) == 1 and len(items) == len(starts):
        # One entry per counted file and no other entry in the maps: the entries are the column's values.
        return {order[0]: items} if _all_keys_are(keys, starts, order[0]) else None
    per_column = {}
    for k, column in enumerate(order):
        at = pc.add(starts, k) if k else starts
        if not _all_keys_are(keys, at, column):
            return None
        per_column[column] = pc.take(items, at)
    return per_column


def _all_keys_are(keys: Any, at: Any, column: str) -> bool:
    """Whether every key at the positions ``at`` is ``column``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(keys.type):
        if keys.dictionary.to_pylist() == [column] and not keys.null_count:
            return True  # one partition column: its every key is the one the dictionary holds
        position = pc.index(keys.dictionary, column).as_py()
        if position < 0 or len(keys.dictionary.unique()) != len(keys.dictionary):
            return False  # a dictionary naming a key twice: left to the entries
        keys, column = keys.indices, position
    return bool(pc.all(pc.equal(pc.take(keys, at), column).fill_null(False)).as_py())
