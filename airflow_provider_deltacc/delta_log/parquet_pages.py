"""A parquet column chunk decoded page by page in Python, for columns that are null on nearly every row.

A checkpoint's ``protocol``, ``metaData`` and ``txn`` columns hold a value on a few of its rows and are null
on every file's row. pyarrow decodes such a column into arrays of a slot per row (a validity bitmap, and
offsets for a list or a map), so its cost grows with the files. In the file the nulls are runs of
definition levels (the RLE/bit-packed hybrid), a run of any length taking a few bytes, so decoding the runs
instead of the rows costs what the pages and the values cost: the same at 1,000 files as at 100,000.

Two readings: :func:`chunk_pages` gives each page's level runs and its values; :func:`chunk_indices`, for a
dictionary-encoded column of one entry per row (a partition-values map of one column), leaves the levels
and the dictionary indices as the hybrid's runs, and :func:`lanes_equal` and :func:`lanes_holding` count and
find values in a bit-packed run with integer arithmetic over the whole run, no value unpacked.

Decoded here: data pages v1 and v2 and the dictionary page; levels in the RLE/bit-packed hybrid; values
``PLAIN`` or dictionary-encoded, of ``INT32``, ``INT64`` and UTF-8 ``BYTE_ARRAY``; the codecs pyarrow
decompresses for parquet. Anything else makes either reading answer None, and the caller reads the
column with pyarrow. Page headers are Thrift's compact protocol
(https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md); their fields are
parquet-format's ``PageHeader`` (parquet.thrift).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

#: parquet-format's page types and encodings used here.
_DATA_PAGE, _DICTIONARY_PAGE, _DATA_PAGE_V2 = 0, 2, 3
_PLAIN, _PLAIN_DICTIONARY, _RLE, _RLE_DICTIONARY = 0, 2, 3, 8
_DICTIONARY_ENCODINGS = (_PLAIN_DICTIONARY, _RLE_DICTIONARY)
#: pyarrow's name of a column chunk's codec -> the codec name ``pyarrow.decompress`` takes.
_CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli", "LZ4_RAW": "lz4_raw"}
_FIXED = {"INT32": (4, "<i"), "INT64": (8, "<q")}

#: A run of level entries with the same repetition and definition levels: (count, rep, def).
Segment = tuple[int, int, int]


@dataclass(frozen=True)
class Leaf:
    """A leaf column as the footer's schema describes it.

    :param physical_type: ``INT32``, ``INT64`` or ``BYTE_ARRAY`` (UTF-8 strings).
    :param max_def: its maximum definition level.
    :param max_rep: its maximum repetition level.
    """

    physical_type: str
    max_def: int
    max_rep: int


@dataclass(frozen=True)
class ColumnChunk:
    """A leaf's column chunk in one row group.

    :param data: its bytes, from its first page to its end.
    :param codec: its codec, as pyarrow names it (``SNAPPY``, ``UNCOMPRESSED``...).
    """

    data: bytes
    codec: str


def read_chunks(group: Any, source: Any, positions: Iterable[int]) -> dict[int, ColumnChunk]:
    """The column chunks of the leaves at ``positions`` in one row group, read in one request.

    :param group: the row group's footer metadata (pyarrow's ``RowGroupMetaData``).
    :param source: the parquet file, random access (``read_at``).
    :param positions: the leaves' column indices.
    """
    spans = {}
    for position in positions:
        chunk = group.column(position)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        spans[position] = (start, chunk.total_compressed_size, chunk.compression)
    first = min(start for start, _, _ in spans.values())
    data = source.read_at(max(start + size for start, size, _ in spans.values()) - first, first)
    return {
        position: ColumnChunk(data[start - first : start - first + size], codec)
        for position, (start, size, codec) in spans.items()
    }


@dataclass(frozen=True)
class Page:
    """A data page's level runs and its non-null values, in order.

    :param segments: the page's level entries as runs (count, rep, def).
    :param values: one value per entry whose def is the leaf's maximum.
    """

    segments: list[Segment]
    values: list[Any]


@dataclass(frozen=True)
class Packed:
    """A bit-packed run of the RLE/bit-packed hybrid: ``count`` values of ``width`` bits each, the first in
    the lowest bits of ``bits``.

    :param count: how many values (padding excluded).
    :param width: the bits of each.
    :param bits: the values, as one integer.
    """

    count: int
    width: int
    bits: int


#: A run of the hybrid: ``[n, value]`` for n repeats of one value, or a bit-packed run.
HybridRun = list[int] | Packed


@dataclass(frozen=True)
class IndexedChunk:
    """A dictionary-encoded column chunk of one entry per row at most: its definition levels and its values'
    dictionary indices, as runs of the hybrid (a bit-packed run left packed).

    :param dictionary: the dictionary page's values.
    :param definitions: every data page's definition levels, in order, as runs.
    :param encoded: each data page's encoded indices (a byte of bit width, then the hybrid) and how many.
    """

    dictionary: list[Any]
    definitions: list[HybridRun]
    encoded: list[tuple[bytes, int]]

    def index_runs(self) -> Iterator[HybridRun]:
        """The non-null values' dictionary indices, in order, as hybrid runs decoded as they are asked for
        (a bit-packed run left packed)."""
        for values, count in self.encoded:
            yield from _hybrid_runs(values, 1, values[0], count)


@dataclass(frozen=True)
class _PageParts:
    """A data page: its level runs (merged, or its definition levels' runs as encoded when read for
    :func:`chunk_indices`), its values' encoding and bytes, and how many values there are."""

    segments: list[Segment]
    definitions: list[HybridRun]
    encoding: int
    values: bytes
    present: int


def chunk_pages(chunk: ColumnChunk, leaf: Leaf) -> list[Page] | None:
    """The data pages of one column chunk, or None for a page, an encoding, a type or a codec this module
    does not decode.

    :param chunk: the column chunk.
    :param leaf: what the footer's schema says of its leaf.
    """
    pages: list[Page] = []
    dictionary: list[Any] | None = None
    for part in _chunk(chunk, leaf):
        if part is None:
            return None
        if isinstance(part, list):
            dictionary = part
        elif part.encoding == _PLAIN:
            pages.append(Page(part.segments, _plain(part.values, part.present, leaf.physical_type)))
        elif part.encoding in _DICTIONARY_ENCODINGS and dictionary is not None:
            pages.append(Page(part.segments, [dictionary[i] for i in _indices(part.values, part.present)]))
        else:
            return None
    return pages


def chunk_indices(chunk: ColumnChunk, leaf: Leaf) -> IndexedChunk | None:
    """A column chunk whose every data page is dictionary-encoded and whose every repetition level is 0 (one
    entry per row at most), its levels and values left as runs (no level or index unpacked one by one); None
    for any other chunk, or one :func:`chunk_pages` declines.

    :param chunk: the column chunk.
    :param leaf: what the footer's schema says of its leaf.
    """
    dictionary: list[Any] | None = None
    definitions: list[HybridRun] = []
    encoded: list[tuple[bytes, int]] = []
    for part in _chunk(chunk, leaf, runs=True):
        if part is None:
            return None
        if isinstance(part, list):
            dictionary = part
            continue
        if part.encoding not in _DICTIONARY_ENCODINGS or dictionary is None:
            return None
        definitions += part.definitions
        if part.present:
            encoded.append((part.values, part.present))
    return None if dictionary is None else IndexedChunk(dictionary, definitions, encoded)


def _chunk(chunk: ColumnChunk, leaf: Leaf, *, runs: bool = False) -> Iterator[list[Any] | _PageParts | None]:
    """A column chunk's pages in order: the dictionary page's values, each data page's parts (with
    ``runs``, as :func:`chunk_indices` reads them); None (and nothing after it) for what this module does not
    decode."""
    if leaf.physical_type not in ("INT32", "INT64", "BYTE_ARRAY"):
        yield None
        return
    data, codec = chunk.data, chunk.codec
    if codec != "UNCOMPRESSED" and codec not in _CODECS:
        yield None
        return
    position = 0
    while position < len(data):
        header, position = _struct(data, position)
        size, kind = header[3], header[1]
        body = data[position : position + size]
        position += size
        if kind == _DICTIONARY_PAGE and header[7].get(2, _PLAIN) in (_PLAIN, _PLAIN_DICTIONARY):
            yield _plain(_inflate(body, header[2], codec), header[7][1], leaf.physical_type)
        elif kind in (_DATA_PAGE, _DATA_PAGE_V2):
            parts = _page_parts(body, header, leaf, codec, runs)
            yield parts
            if parts is None:
                return
        else:
            yield None
            return


def _page_parts(body: bytes, header: dict[int, Any], leaf: Leaf, codec: str, runs: bool) -> _PageParts | None:
    split = _split(body, header, leaf, codec)
    if split is None:
        return None
    count, encoding, rep_bytes, def_bytes, values = split
    width = leaf.max_def.bit_length()
    if runs:
        if leaf.max_rep and not _all_zero(_hybrid_runs(rep_bytes, 0, leaf.max_rep.bit_length(), count)):
            return None
        definitions: list[HybridRun] = (
            list(_hybrid_runs(def_bytes, 0, width, count)) if width else [[count, 0]]
        )
        present = sum(lanes_equal(run, leaf.max_def) for run in definitions)
        return _PageParts([], definitions, encoding, values, present)
    segments = _segments(_levels(rep_bytes, leaf.max_rep, count), _levels(def_bytes, leaf.max_def, count))
    if sum(n for n, _, _ in segments) != count:
        return None
    present = sum(n for n, _, level in segments if level == leaf.max_def)
    return _PageParts(segments, [], encoding, values, present)


def _split(
    body: bytes, header: dict[int, Any], leaf: Leaf, codec: str
) -> tuple[int, int, bytes, bytes, bytes] | None:
    """A data page's entry count, values' encoding, repetition and definition levels' bytes, values' bytes."""
    if header[1] == _DATA_PAGE:
        info = header[5]
        if (leaf.max_def and info.get(3) != _RLE) or (leaf.max_rep and info.get(4) != _RLE):
            return None
        page = _inflate(body, header[2], codec)
        rep_bytes, position = _prefixed(page, 0, leaf.max_rep)
        def_bytes, position = _prefixed(page, position, leaf.max_def)
        return info[1], info[2], rep_bytes, def_bytes, page[position:]
    info = header[8]
    rep_size, def_size = info[6], info[5]
    values = body[rep_size + def_size :]
    if info.get(7, True):
        values = _inflate(values, header[2] - rep_size - def_size, codec)
    return info[1], info[4], body[:rep_size], body[rep_size : rep_size + def_size], values


def _prefixed(page: bytes, position: int, max_level: int) -> tuple[bytes, int]:
    """A v1 page's levels: their byte length, then the bytes (none when the level is always 0)."""
    if not max_level:
        return b"", position
    (size,) = struct.unpack_from("<I", page, position)
    return page[position + 4 : position + 4 + size], position + 4 + size


def _inflate(body: bytes, size: int, codec: str) -> bytes:
    if codec == "UNCOMPRESSED":
        return body
    import pyarrow as pa

    return pa.decompress(body, decompressed_size=size, codec=_CODECS[codec], asbytes=True)


def _levels(data: bytes, max_level: int, count: int) -> list[list[int]]:
    if not max_level:
        return [[count, 0]]
    return _hybrid(data, 0, max_level.bit_length(), count)


def _all_zero(runs: Iterator[HybridRun]) -> bool:
    """Whether every value of the runs is 0, read run by run until one is not."""
    return not any(run.bits if isinstance(run, Packed) else run[1] for run in runs)


def lanes_equal(run: HybridRun, value: int) -> int:
    """How many values of a run equal ``value``.

    :param run: a run of the hybrid.
    :param value: the value.
    """
    if not isinstance(run, Packed):
        return run[0] if run[1] == value else 0
    if not run.width:  # a one-entry dictionary's indices take no bits: every value is 0
        return run.count if value == 0 else 0
    return run.count - _nonzero_lanes(run, value).bit_count()


def lanes_holding(run: HybridRun, candidates: set[int]) -> set[int]:
    """Which of ``candidates`` a run holds; a bit-packed run is searched for each with integer arithmetic,
    its lanes not unpacked.

    :param run: a run of the hybrid.
    :param candidates: the values to look for.
    """
    if not isinstance(run, Packed):
        return candidates & {run[1]} if run[0] else set()
    if not run.width:
        return candidates & {0} if run.count else set()
    highs = _lanes(run.count, run.width).highs
    return {value for value in candidates if _nonzero_lanes(run, value) != highs}


def _nonzero_lanes(run: Packed, value: int) -> int:
    """The high bit of each lane of the run that does not hold ``value`` (every lane's, for a value wider
    than a lane). A lane equal to ``value`` is zero once xor-ed with it, and adding the lanes' low bits to a
    lane's own low bits sets its high bit exactly when the lane was not zero, without a carry into the
    next lane."""
    lanes = _lanes(run.count, run.width)
    if value >> run.width:
        return lanes.highs
    xored = run.bits ^ (value * lanes.ones)
    return (((xored & lanes.lows) + lanes.lows) | xored) & lanes.highs


class _Masks(NamedTuple):
    ones: int
    lows: int
    highs: int


@lru_cache(maxsize=128)
def _lanes(count: int, width: int) -> _Masks:
    """For ``count`` lanes of ``width`` (at least 1) bits: each lane 1, each lane's bits below its highest,
    each lane's highest bit."""
    ones = ((1 << (count * width)) - 1) // ((1 << width) - 1)
    return _Masks(ones, ones * ((1 << (width - 1)) - 1), ones << (width - 1))


def _indices(values: bytes, count: int) -> list[int]:
    if not count:
        return []
    indices: list[int] = []
    for n, index in _hybrid(values, 1, values[0], count):
        indices += [index] * n
    return indices


def _hybrid(data: bytes, position: int, width: int, count: int) -> list[list[int]]:
    """``count`` values of the RLE/bit-packed hybrid as runs ``[n, value]`` (equal neighbours merged)."""
    runs: list[list[int]] = []
    for run in _hybrid_runs(data, position, width, count):
        if isinstance(run, Packed):
            mask = (1 << run.width) - 1
            for k in range(run.count):
                _append(runs, 1, (run.bits >> (k * run.width)) & mask)
        else:
            _append(runs, run[0], run[1])
    return runs


def _hybrid_runs(data: bytes, position: int, width: int, count: int) -> Iterator[HybridRun]:
    """``count`` values of the RLE/bit-packed hybrid as its runs, a bit-packed one left packed."""
    byte_width = (width + 7) // 8
    while count > 0:
        header, position = _varint(data, position)
        if header & 1:
            size = (header >> 1) * width
            taken = min((header >> 1) * 8, count)
            packed = int.from_bytes(data[position : position + size], "little")
            yield Packed(taken, width, packed & ((1 << (taken * width)) - 1))
            position += size
        else:
            taken = min(header >> 1, count)
            yield [taken, int.from_bytes(data[position : position + byte_width], "little")]
            position += byte_width
        count -= taken


def _append(runs: list[list[int]], n: int, value: int) -> None:
    if runs and runs[-1][1] == value:
        runs[-1][0] += n
    elif n:
        runs.append([n, value])


def _segments(reps: list[list[int]], defs: list[list[int]]) -> list[Segment]:
    """The two level streams' runs merged into runs of entries sharing both levels."""
    segments: list[Segment] = []
    r = d = 0
    rep_left, def_left = reps[0][0], defs[0][0]
    while r < len(reps) and d < len(defs):
        n = min(rep_left, def_left)
        segments.append((n, reps[r][1], defs[d][1]))
        rep_left -= n
        def_left -= n
        if not rep_left:
            r += 1
            rep_left = reps[r][0] if r < len(reps) else 0
        if not def_left:
            d += 1
            def_left = defs[d][0] if d < len(defs) else 0
    return segments


def _plain(data: bytes, count: int, physical_type: str) -> list[Any]:
    if physical_type in _FIXED:
        width, form = _FIXED[physical_type]
        return [value for (value,) in struct.iter_unpack(form, data[: width * count])]
    values: list[Any] = []
    position = 0
    for _ in range(count):
        (size,) = struct.unpack_from("<I", data, position)
        values.append(str(data[position + 4 : position + 4 + size], "utf-8"))
        position += 4 + size
    return values


def _varint(data: bytes, position: int) -> tuple[int, int]:
    byte = data[position]
    if byte < 0x80:
        return byte, position + 1
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _struct(data: bytes, position: int) -> tuple[dict[int, Any], int]:
    """A Thrift compact struct as {field id: value} (nested structs as dicts, lists as lists)."""
    fields: dict[int, Any] = {}
    field_id = 0
    while True:
        header = data[position]
        position += 1
        if not header:
            return fields, position
        delta, kind = header >> 4, header & 0x0F
        if delta:
            field_id += delta
        else:
            raw, position = _varint(data, position)
            field_id = (raw >> 1) ^ -(raw & 1)
        if 4 <= kind <= 6 and data[position] < 0x80:  # a small integer, most of a page header
            fields[field_id] = (data[position] >> 1) ^ -(data[position] & 1)
            position += 1
            continue
        fields[field_id], position = _value(data, position, kind)


def _value(data: bytes, position: int, kind: int) -> tuple[Any, int]:
    if kind in (1, 2):
        return kind == 1, position
    if kind == 3:
        return data[position], position + 1
    if kind in (4, 5, 6):
        raw, position = _varint(data, position)
        return (raw >> 1) ^ -(raw & 1), position
    if kind == 7:
        return struct.unpack_from("<d", data, position)[0], position + 8
    if kind == 8:
        size, position = _varint(data, position)
        return data[position : position + size], position + size
    if kind in (9, 10):
        return _list(data, position)
    if kind == 12:
        return _struct(data, position)
    raise ValueError(f"a Thrift compact type a parquet page header does not use: {kind}")


def _list(data: bytes, position: int) -> tuple[list[Any], int]:
    header = data[position]
    position += 1
    size, kind = header >> 4, header & 0x0F
    if size == 15:
        size, position = _varint(data, position)
    items = []
    for _ in range(size):
        if kind in (1, 2):  # a list's booleans are a byte each
            items.append(data[position] == 1)
            position += 1
        else:
            item, position = _value(data, position, kind)
            items.append(item)
    return items, position
