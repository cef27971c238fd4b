"""The distinct values of a table's one partition column, read from the pages of a checkpoint's
``add.partitionValues`` without a value per file.

A checkpoint holds a partition-values map per file. With one partition column every map holds one entry,
and the writers dictionary-encode both of the map's leaves: the key leaf's dictionary is then that column
alone, and the value leaf's pages are the dictionary and, per file, an index into it in the RLE/bit-packed
hybrid. The distinct values are the dictionary entries some index names. An RLE run names its index; a
bit-packed run is searched for each entry with integer arithmetic over the whole run
(:func:`~airflow_provider_deltacc.delta_log.parquet_pages.lanes_holding`), so no index is unpacked, and the
search stops once every entry is found. A file whose map lacks the column or holds a null adds a null value,
as Delta reads it; its definition level says so, and the levels are searched the same way (a checkpoint's
file rows and its removed files' rows alternate in delta-spark's). A row of two entries is found in the
repetition levels, run by run, before anything is unpacked.

Anything else leaves the read to pyarrow (:func:`single_column_values` answers None): a map of two entries
in some file, a key dictionary of another size, a value page not dictionary-encoded (a writer's dictionary
outgrew its page), a dictionary of more than :data:`MAX_DICTIONARY` values (the search costs a pass per
entry), no file at all, or any page :mod:`~airflow_provider_deltacc.delta_log.parquet_pages` declines.
"""

from __future__ import annotations

import struct
from typing import Any

from airflow_provider_deltacc.delta_log.parquet_pages import (
    IndexedChunk,
    Leaf,
    chunk_indices,
    lanes_holding,
    read_chunks,
)

#: The most distinct values a value leaf's dictionary may hold for the search by runs.
MAX_DICTIONARY = 64
_MAP = "add.partitionValues."
#: The definition level from which a row is a file's: its ``add`` struct is there.
_A_FILE = 1


def single_column_values(parquet: Any, source: Any) -> tuple[str, set[str | None]] | None:
    """The one column every file's partition-values map names, and its distinct values (None for a file
    whose map lacks it or holds a null); None when the file is not read so (see the module).

    :param parquet: the ``pyarrow.parquet.ParquetFile`` of a checkpoint part or sidecar (its footer).
    :param source: the same file, random access (``read_at``).
    """
    import pyarrow as pa

    leaves = _leaves(parquet)
    if leaves is None:
        return None
    keys: set[str] = set()
    values: set[str | None] = set()
    try:
        for group in range(parquet.metadata.num_row_groups):
            found = _group_values(parquet.metadata.row_group(group), source, leaves)
            if found is None:
                return None
            keys |= found[0]
            values |= found[1]
    except (IndexError, KeyError, ValueError, struct.error, pa.ArrowException):  # not as parquet-format says
        return None
    return (keys.pop(), values) if len(keys) == 1 and values else None


def _leaves(parquet: Any) -> tuple[tuple[int, Leaf], tuple[int, Leaf]] | None:
    """The map's key leaf and value leaf (column index, levels); None when the map is not a map of strings
    whose levels the arrow schema explains."""
    import pyarrow as pa

    schema = parquet.schema_arrow
    if "add" not in schema.names or not pa.types.is_struct(schema.field("add").type):
        return None
    add = schema.field("add")
    index = add.type.get_field_index("partitionValues")
    if not add.nullable or index < 0 or not pa.types.is_map(add.type.field(index).type):
        return None
    kind = add.type.field(index)
    paths = [(i, ".".join(path)) for i, path in enumerate(parquet.reader.column_paths)]
    found = [(i, path) for i, path in paths if path.startswith(_MAP)]
    if len(found) != 2:
        return None
    entry = 2 + int(kind.nullable)  # add present, the map (if nullable) not null, one entry
    deepest = (entry, entry + int(kind.type.item_field.nullable))
    described = [parquet.metadata.schema.column(i) for i, _ in found]
    if any(
        column.physical_type != "BYTE_ARRAY"
        or column.max_definition_level != level
        or column.max_repetition_level != 1
        for column, level in zip(described, deepest, strict=True)
    ):
        return None
    key, value = ((i, Leaf("BYTE_ARRAY", level, 1)) for (i, _), level in zip(found, deepest, strict=True))
    return key, value


def _group_values(
    group: Any, source: Any, leaves: tuple[tuple[int, Leaf], tuple[int, Leaf]]
) -> tuple[set[str], set[str | None]] | None:
    """The keys and values of one row group's maps."""
    (key_at, key_leaf), (value_at, value_leaf) = leaves
    chunks = read_chunks(group, source, (key_at, value_at))
    key, value = chunk_indices(chunks[key_at], key_leaf), chunk_indices(chunks[value_at], value_leaf)
    if key is None or value is None or len(key.dictionary) > 1 or len(value.dictionary) > MAX_DICTIONARY:
        return None
    # Definition levels from _A_FILE on are files; below the value's deepest, files without a value.
    without_value = set(range(_A_FILE, value_leaf.max_def))
    files = any(lanes_holding(run, {value_leaf.max_def} | without_value) for run in value.definitions)
    if not files:
        return set(), set()
    found: set[str | None] = {value.dictionary[i] for i in _distinct_indices(value)}
    if any(lanes_holding(run, without_value) for run in value.definitions):
        found.add(None)  # a file whose map lacks the column, or holds a null
    return ({str(key.dictionary[0])} if key.dictionary else set()), found


def _distinct_indices(chunk: IndexedChunk) -> set[int]:
    """The dictionary indices the chunk's values name, run by run until every entry is found."""
    size = len(chunk.dictionary)
    found: set[int] = set()
    for run in chunk.index_runs():
        if len(found) == size:
            break
        found |= lanes_holding(run, set(range(size)) - found)
    return found
