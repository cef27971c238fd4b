"""The rows of a checkpoint's non-file action columns, decoded from their pages without a slot per file.

Each action (``protocol``, ``metaData``, ``txn``, ``sidecar``) is an optional struct column whose fields are
flat values, lists or maps; the rows that hold it are those whose definition level reaches the struct's.
:mod:`~airflow_provider_deltacc.delta_log.parquet_pages` gives each leaf's level runs and values; this
module walks the runs, skipping a run of rows without the action in one step, and builds the rows that hold
it as pyarrow's ``to_pylist`` would (a list as a list, a map as a list of key/value pairs). A field of
another shape, a level the arrow schema does not explain, or a page :mod:`parquet_pages` does not decode
makes the answer None: the caller then reads the columns with pyarrow.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.delta_log.parquet_pages import Leaf, Page, chunk_pages, read_chunks

_TYPES = {"string": "BYTE_ARRAY", "int32": "INT32", "int64": "INT64"}


@dataclass(frozen=True)
class _Shape:
    """Where a leaf's definition levels say its struct, its field and a field's entry are present.

    :param position: the leaf's column index in the footer.
    :param leaf: the leaf as the footer describes it.
    :param present: the level from which the struct holds an action.
    :param field: the level from which a list or map field is not null (``present`` for a flat field).
    :param repeated: whether the field is a list or a map.
    """

    position: int
    leaf: Leaf
    present: int
    field: int
    repeated: bool


def sparse_struct_rows(
    parquet: Any, source: Any, groups: list[int], fields: dict[str, list[str]]
) -> dict[str, list[dict[str, Any]]] | None:
    """For each struct column, its non-null rows in the row groups ``groups``, as dicts of ``fields``; None
    when a field or a page is not one this reader decodes.

    :param parquet: the ``pyarrow.parquet.ParquetFile`` (its footer and arrow schema).
    :param source: the same file, random access (``read_at``).
    :param groups: the row groups to read, in order.
    :param fields: for each struct column, the names of the fields to read (each present in the file).
    """
    import pyarrow as pa

    arrow = parquet.schema_arrow
    paths = {".".join(path): i for i, path in enumerate(parquet.reader.column_paths)}
    shapes: dict[str, dict[str, list[_Shape]]] = {}
    for column, names in fields.items():
        shaped = _shapes(arrow.field(column), paths, parquet.metadata.schema, names)
        if shaped is None:
            return None
        shapes[column] = shaped
    found: dict[str, list[dict[str, Any]]] = {column: [] for column in fields}
    try:
        for group in groups:
            chunks = _group_chunks(parquet.metadata.row_group(group), source, shapes)
            for column, by_field in shapes.items():
                rows = _column_rows(chunks, by_field)
                if rows is None:
                    return None
                found[column] += rows
    except (IndexError, KeyError, ValueError, struct.error, pa.ArrowException):  # not as parquet-format says
        return None
    return found


def _shapes(top: Any, paths: dict[str, int], schema: Any, names: list[str]) -> dict[str, list[_Shape]] | None:
    """Each field's leaves of the struct column ``top``, as their levels say where they are present."""
    import pyarrow as pa

    if not top.nullable or not pa.types.is_struct(top.type):
        return None
    column = top.name
    shapes: dict[str, list[_Shape]] = {}
    for name in names:
        child = top.type.field(name)
        field = 1 + int(child.nullable)
        kind = child.type
        if pa.types.is_map(kind):
            prefix = [p for p in paths if p.startswith(f"{column}.{name}.")]
            leaves = (
                list(zip(prefix, (kind.key_field, kind.item_field), strict=False)) if len(prefix) == 2 else []
            )
        elif pa.types.is_list(kind):
            prefix = [p for p in paths if p.startswith(f"{column}.{name}.")]
            leaves = [(prefix[0], kind.value_field)] if len(prefix) == 1 else []
        else:
            leaves = [(f"{column}.{name}", child)] if f"{column}.{name}" in paths else []
            field = 1
        repeated = pa.types.is_map(kind) or pa.types.is_list(kind)
        made = [_shape(schema, paths[path], leaf, field, repeated) for path, leaf in leaves]
        known = [shape for shape in made if shape is not None]
        if not leaves or len(known) < len(made):
            return None
        shapes[name] = known
    return shapes


def _shape(schema: Any, position: int, leaf: Any, field: int, repeated: bool) -> _Shape | None:
    described = schema.column(position)
    physical = _TYPES.get(str(leaf.type))
    deepest = (field + 1 if repeated else field) + int(leaf.nullable)
    if (
        physical is None
        or physical != described.physical_type
        or described.max_definition_level != deepest
        or described.max_repetition_level != int(repeated)
    ):
        return None
    made = Leaf(physical, deepest, int(repeated))
    return _Shape(position, made, present=1, field=field, repeated=repeated)


def _group_chunks(
    group: Any, source: Any, shapes: dict[str, dict[str, list[_Shape]]]
) -> dict[int, list[Page]]:
    """Each leaf's pages in one row group, its bytes read in one request for all of them."""
    leaves = {
        shape.position: shape.leaf
        for by_field in shapes.values()
        for row in by_field.values()
        for shape in row
    }
    pages: dict[int, list[Page]] = {}
    for position, chunk in read_chunks(group, source, leaves).items():
        decoded = chunk_pages(chunk, leaves[position])
        if decoded is None:
            raise ValueError("a page this reader does not decode")
        pages[position] = decoded
    return pages


def _column_rows(
    chunks: dict[int, list[Page]], by_field: dict[str, list[_Shape]]
) -> list[dict[str, Any]] | None:
    """The rows holding the column's action, each a dict of its fields; None when the leaves disagree on
    which rows those are."""
    rows: list[int] | None = None
    values: dict[str, list[Any]] = {}
    for name, leaves in by_field.items():
        decoded = [dict(_leaf_rows(chunks[shape.position], shape)) for shape in leaves]
        found = list(decoded[0])
        if rows is None:
            rows = found
        if found != rows or any(list(other) != rows for other in decoded[1:]):
            return None
        if len(leaves) == 2:  # a map: its keys' leaf and its values' leaf
            values[name] = [
                None if keys is None else list(zip(keys, decoded[1][row], strict=True))
                for row, keys in decoded[0].items()
            ]
        else:
            values[name] = list(decoded[0].values())
    return [{name: values[name][i] for name in by_field} for i in range(len(rows or []))]


def _leaf_rows(pages: list[Page], shape: _Shape) -> Iterator[tuple[int, Any]]:
    """(row, value) for each row holding the action: a flat field's value, or a list field's entries (None
    for a null list)."""
    row = -1
    current: tuple[int, list[Any] | None] | None = None
    for page in pages:
        values = iter(page.values)
        for count, rep, level in page.segments:
            if level < shape.present:  # rows without the action: each entry is a row of its own
                row += count
                continue
            for _ in range(count):
                value = next(values) if level == shape.leaf.max_def else None
                if not shape.repeated:
                    row += 1
                    yield row, value
                    continue
                if rep == 0:
                    if current is not None:
                        yield current
                    row += 1
                    current = (row, None if level < shape.field else [])
                if level > shape.field and current is not None and current[1] is not None:
                    current[1].append(value)
    if current is not None:
        yield current
