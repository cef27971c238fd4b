"""The checkpoint's non-file actions decoded from their pages give the rows pyarrow decodes, for every way a
parquet writer lays them out; what the page decoder does not know is left to pyarrow."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_deltacc.delta_log import checkpoint
from airflow_provider_deltacc.delta_log.sparse_rows import sparse_struct_rows

pytestmark = pytest.mark.unit

FIELDS = {
    "protocol": ["minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"],
    "metaData": ["schemaString", "partitionColumns", "configuration"],
    "txn": ["appId", "version"],
}
SCHEMA = pa.schema(
    [
        pa.field(
            "add", pa.struct([pa.field("path", pa.string(), nullable=False), pa.field("size", pa.int64())])
        ),
        pa.field(
            "protocol",
            pa.struct(
                [
                    pa.field("minReaderVersion", pa.int32(), nullable=False),
                    pa.field("minWriterVersion", pa.int32()),
                    pa.field("readerFeatures", pa.list_(pa.string())),
                    pa.field("writerFeatures", pa.list_(pa.field("element", pa.string(), nullable=False))),
                ]
            ),
        ),
        pa.field(
            "metaData",
            pa.struct(
                [
                    pa.field("id", pa.string(), nullable=False),
                    pa.field("schemaString", pa.string()),
                    pa.field("partitionColumns", pa.list_(pa.string()), nullable=False),
                    pa.field("configuration", pa.map_(pa.string(), pa.string())),
                ]
            ),
        ),
        pa.field(
            "txn",
            pa.struct([pa.field("appId", pa.string(), nullable=False), pa.field("version", pa.int64())]),
        ),
    ]
)


def _rows(seed: int, files: int) -> list[dict[str, Any]]:
    """``files`` adds and, at random places, protocols, metadata and txns of every shape their fields take:
    null, empty and non-empty lists and maps, null list elements and map values, long strings."""
    chance = random.Random(seed)
    words = ["appendOnly", "deletionVectors", "", "ü-ñ", "x" * 300]

    def listed(nullable: bool) -> list[Any] | None:
        if nullable and chance.random() < 0.3:
            return None
        return [chance.choice(words + ([None] if nullable else [])) for _ in range(chance.randrange(4))]

    rows: list[dict[str, Any]] = [{"add": {"path": f"part-{i}.parquet", "size": i}} for i in range(files)]
    for i in range(chance.randrange(1, 6)):
        rows.append(
            {
                "protocol": {
                    "minReaderVersion": chance.randrange(1, 4),
                    "minWriterVersion": chance.choice([None, 2, 7]),
                    "readerFeatures": listed(True),
                    "writerFeatures": [w for w in (listed(False) or []) if w is not None],
                }
            }
        )
        configuration = (
            None
            if chance.random() < 0.3
            else [(f"k{j}", chance.choice([None, "v", ""])) for j in range(chance.randrange(3))]
        )
        rows.append(
            {
                "metaData": {
                    "id": f"id-{i}",
                    "schemaString": chance.choice([None, '{"type":"struct"}', "s" * 2000]),
                    "partitionColumns": [w for w in (listed(False) or []) if w is not None],
                    "configuration": configuration,
                }
            }
        )
    for i in range(chance.randrange(0, 40)):
        rows.append(
            {"txn": {"appId": f"app-{chance.randrange(8)}", "version": chance.choice([None, i, 2**40 + i])}}
        )
    chance.shuffle(rows)
    return rows


def _write(path: Path, rows: list[dict[str, Any]], **options: Any) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path, **options)
    return path


def _both(path: Path) -> tuple[Any, Any]:
    """The sparse rows and pyarrow's rows of every row group of the file."""
    source = pa.OSFile(str(path), "rb")
    parquet = pq.ParquetFile(source)
    groups = list(range(parquet.num_row_groups))
    sparse = sparse_struct_rows(parquet, source, groups, FIELDS)
    paths = [f"{column}.{name}" for column, names in FIELDS.items() for name in names]
    return sparse, checkpoint._decoded_rows(parquet, groups, paths)


WRITERS = {
    "plain-v1": {"use_dictionary": False, "compression": "none"},
    "dictionary-v1-snappy": {"compression": "snappy"},
    "dictionary-v2-zstd": {"data_page_version": "2.0", "compression": "zstd"},
    "plain-v2-gzip-small-pages": {
        "data_page_version": "2.0",
        "compression": "gzip",
        "use_dictionary": False,
        "data_page_size": 64,
    },
    "dictionary-brotli-small-pages-row-groups": {
        "compression": "brotli",
        "data_page_size": 32,
        "row_group_size": 97,
    },
    "no-statistics": {"write_statistics": False, "compression": "snappy"},
}


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("seed", range(6))
def test_the_pages_give_the_rows_pyarrow_decodes(tmp_path: Path, writer: str, seed: int) -> None:
    path = _write(tmp_path / "c.parquet", _rows(seed, files=seed * 700), **WRITERS[writer])
    sparse, decoded = _both(path)
    assert sparse is not None, "read by the pages, not left to pyarrow"
    assert sparse == decoded
    assert sparse["metaData"] and sparse["protocol"]


def test_a_page_of_runs_only_skips_the_rows_without_the_action(tmp_path: Path) -> None:
    # 50,000 files, the three actions after them: each column is one run of nulls, then the values.
    rows = [{"add": {"path": f"f{i}", "size": i}} for i in range(50_000)]
    rows += [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": [],
                "writerFeatures": ["v2"],
            }
        },
        {
            "metaData": {
                "id": "m",
                "schemaString": "s",
                "partitionColumns": ["d"],
                "configuration": [("a", None)],
            }
        },
        {"txn": {"appId": "a", "version": 5}},
    ]
    sparse, decoded = _both(_write(tmp_path / "c.parquet", rows))
    assert (
        sparse
        == decoded
        == {
            "protocol": [
                {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [], "writerFeatures": ["v2"]}
            ],
            "metaData": [{"schemaString": "s", "partitionColumns": ["d"], "configuration": [("a", None)]}],
            "txn": [{"appId": "a", "version": 5}],
        }
    )


@pytest.mark.parametrize(
    "options",
    [
        {"use_dictionary": False, "column_encoding": {"txn.version": "DELTA_BINARY_PACKED"}},
        {"use_dictionary": False, "column_encoding": {"metaData.schemaString": "DELTA_LENGTH_BYTE_ARRAY"}},
        {"compression": "lz4"},  # parquet's LZ4 is two codecs pyarrow names alike
    ],
    ids=["delta-binary-packed", "delta-length-byte-array", "lz4"],
)
def test_what_the_pages_reader_does_not_decode_is_left_to_pyarrow(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    path = _write(tmp_path / "c.parquet", _rows(1, files=100), **options)
    sparse, decoded = _both(path)
    assert sparse is None and decoded["metaData"]


def test_a_field_of_another_type_is_left_to_pyarrow(tmp_path: Path) -> None:
    schema = pa.schema(
        [pa.field("txn", pa.struct([pa.field("appId", pa.large_string()), pa.field("version", pa.int64())]))]
    )
    path = tmp_path / "c.parquet"
    pq.write_table(
        pa.Table.from_pylist([{"txn": None}, {"txn": {"appId": "a", "version": 1}}], schema=schema), path
    )
    source = pa.OSFile(str(path), "rb")
    assert sparse_struct_rows(pq.ParquetFile(source), source, [0], {"txn": ["appId", "version"]}) is None


def test_a_truncated_column_chunk_is_left_to_pyarrow(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.parquet", _rows(2, files=10), compression="none")
    source = pa.OSFile(str(path), "rb")
    parquet = pq.ParquetFile(source)

    class Truncated:
        def read_at(self, size: int, offset: int) -> bytes:
            return bytes(source.read_at(size, offset))[: size // 2]

    assert sparse_struct_rows(parquet, Truncated(), [0], FIELDS) is None


def test_a_codec_this_pyarrow_was_built_without_is_left_to_pyarrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path / "c.parquet", _rows(3, files=10), compression="snappy")

    def unavailable(*_args: Any, **_kwargs: Any) -> bytes:
        raise pa.ArrowNotImplementedError("Support for codec 'snappy' not built")

    monkeypatch.setattr(pa, "decompress", unavailable)
    source = pa.OSFile(str(path), "rb")
    assert sparse_struct_rows(pq.ParquetFile(source), source, [0], FIELDS) is None


@pytest.mark.parametrize(("identities", "by_pages"), [(10, True), (100, False)])
def test_an_action_of_many_rows_is_left_to_pyarrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identities: int, by_pages: bool
) -> None:
    """Scattered among the files, each row costs the page reader more than pyarrow's decoding of every row:
    past 16 rows (or one per 1,000 rows), an action column is pyarrow's."""
    chance = random.Random(identities)
    rows: list[dict[str, Any]] = [{"add": {"path": f"f{i}", "size": i}} for i in range(2000)]
    rows += [
        {
            "protocol": {
                "minReaderVersion": 1,
                "minWriterVersion": 2,
                "readerFeatures": None,
                "writerFeatures": [],
            }
        },
        {"metaData": {"id": "m", "schemaString": "s", "partitionColumns": [], "configuration": []}},
    ]
    rows += [{"txn": {"appId": f"dag/task/{i}", "version": i}} for i in range(identities)]
    chance.shuffle(rows)
    path = _write(tmp_path / "c.parquet", rows)
    paged: list[bool] = []
    real = checkpoint.sparse_struct_rows

    def recording(*args: Any) -> Any:
        paged.append(True)
        return real(*args)

    monkeypatch.setattr(checkpoint, "sparse_struct_rows", recording)
    actions = checkpoint.CheckpointActions()
    source = pa.OSFile(str(path), "rb")
    checkpoint._read_state_actions(pq.ParquetFile(source), source, ["protocol", "metaData", "txn"], actions)
    assert bool(paged) == by_pages
    assert actions.txns == {f"dag/task/{i}": i for i in range(identities)}
    assert actions.protocol is not None and actions.metadata is not None
