"""The log reader takes the protocol, metadata and txn versions from the latest version's checksum file
(``<version>.crc``, which delta-spark writes after each commit), without reading the checkpoint; a checksum
that is missing, of an older version, unreadable or without the txn identities asked for leaves the read to
the checkpoint, and the partitions always come from the files.

delta-rs writes no checksum, so these tables get the one delta-spark would write, built from delta-rs's own
answers; ``tests/integration/test_log_reader_on_delta_spark.py`` reads the ones delta-spark writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyarrow import ArrowInvalid

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.checksum import checksum_name
from airflow_provider_deltacc.delta_log.log_reader import LogState, read_log_state
from tests.support.log_reader_checks import COMPARED_FIELDS, day

pytestmark = pytest.mark.unit

APPS = ("dag/a/0", "dag/b/0", "never/recorded")


def _table(path: Path, commits: int) -> str:
    """``commits`` appends, ``APPS[i % 2]`` version ``i``, checkpointed at the last one's version - 1."""
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    for i in range(commits):
        rows = pa.table({"id": pa.array([i], pa.int64()), "day": [day(i % 3)]})
        properties = CommitProperties(app_transactions=[Transaction(app_id=APPS[i % 2], version=i)])
        write_deltalake(str(path), rows, mode="append", partition_by=["day"], commit_properties=properties)
        if i == commits - 2:
            DeltaTable(str(path)).create_checkpoint()
    return str(path)


def _log(table: str) -> Path:
    return Path(table) / "_delta_log"


def _write_checksum(table: str, version: int, *, with_txns: bool = True, **extra: Any) -> None:
    """The checksum delta-spark would write for ``version``: the log's protocol and metadata actions and
    every txn identity recorded by then."""
    protocol = metadata = None
    txns: dict[str, int] = {}
    for v in range(version + 1):
        for line in (_log(table) / f"{v:020d}.json").read_text().splitlines():
            action = json.loads(line)
            protocol = action.get("protocol", protocol)
            metadata = action.get("metaData", metadata)
            if "txn" in action:
                txns[action["txn"]["appId"]] = action["txn"]["version"]
    content: dict[str, Any] = {"txnId": "t", "tableSizeBytes": 1, "numFiles": 1, "numMetadata": 1}
    content |= {"numProtocol": 1, "metadata": metadata, "protocol": protocol, **extra}
    if with_txns:
        content["setTransactions"] = [{"appId": a, "version": v, "lastUpdated": 1} for a, v in txns.items()]
    (_log(table) / checksum_name(version)).write_text(json.dumps(content))


def _break_checkpoint(table: str) -> None:
    (checkpoint,) = _log(table).glob("*.checkpoint.parquet")
    checkpoint.write_bytes(b"not parquet")


def _same(state: LogState, expected: LogState) -> None:
    for name in COMPARED_FIELDS:
        assert getattr(state, name) == getattr(expected, name), name
    assert state.schema_string == expected.schema_string


def test_the_latest_versions_checksum_answers_without_the_checkpoint(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 5)
    expected = read_log_state(Table(table), app_ids=APPS)
    _write_checksum(table, 4)
    _break_checkpoint(table)  # a read of the checkpoint would fail now

    state = read_log_state(Table(table), app_ids=APPS)
    _same(state, expected)
    assert state.version == 4 and state.txn_versions == {"dag/a/0": 4, "dag/b/0": 3}
    with pytest.raises(ArrowInvalid):  # the partitions come from the checkpoint's files, never a checksum
        read_log_state(Table(table), app_ids=APPS, partitions=True)


@pytest.mark.parametrize(
    ("case", "checksum"),
    [
        ("an older version's", {"version": 3}),
        ("one without its txn identities, when they are asked for", {"with_txns": False}),
        ("one that does not parse", {"garbage": True}),
        ("one without the metadata", {"metadata": None}),
    ],
)
def test_a_checksum_the_read_cannot_use_leaves_it_to_the_checkpoint(
    tmp_path: Path, case: str, checksum: dict[str, Any]
) -> None:
    table = _table(tmp_path / "t", 5)
    expected = read_log_state(Table(table), app_ids=APPS)
    if checksum.pop("garbage", False):
        (_log(table) / checksum_name(4)).write_text("{not json")
    else:
        _write_checksum(table, checksum.pop("version", 4), **checksum)
    _same(read_log_state(Table(table), app_ids=APPS), expected)
    _break_checkpoint(table)
    with pytest.raises(ArrowInvalid):  # read from the (broken) checkpoint: nothing else had it
        read_log_state(Table(table), app_ids=APPS)


def test_a_checksum_without_txn_identities_answers_a_read_that_asks_for_none(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 5)
    expected = read_log_state(Table(table))
    _write_checksum(table, 4, with_txns=False)
    _break_checkpoint(table)
    _same(read_log_state(Table(table)), expected)


def test_the_checksum_of_a_cleaned_up_version_a_stale_last_checkpoint_names_is_not_believed(
    tmp_path: Path,
) -> None:
    table = _table(tmp_path / "t", 5)  # the checkpoint at 3, then commit 4
    expected = read_log_state(Table(table), app_ids=APPS)
    _write_checksum(table, 1)
    # A cleanup that deleted the versions before the checkpoint at 3 but left their checksums, under a
    # _last_checkpoint that still names version 1.
    for version in range(3):
        (_log(table) / f"{version:020d}.json").unlink()
    (_log(table) / "_last_checkpoint").write_text(json.dumps({"version": 1, "size": 1}))
    state = read_log_state(Table(table), app_ids=APPS)
    _same(state, expected)
    assert state.version == 4


def test_with_the_partitions_asked_the_checksum_gives_the_state_and_the_checkpoint_only_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_deltacc.delta_log import checkpoint

    table = _table(tmp_path / "t", 5)
    expected = read_log_state(Table(table), app_ids=APPS, partitions=True)
    _write_checksum(table, 4)
    decoded: list[list[str]] = []
    real = checkpoint._read_state_actions

    def recording(parquet: Any, source: Any, columns: list[str], actions: Any) -> list[str]:
        decoded.append(list(columns))
        return real(parquet, source, columns, actions)

    monkeypatch.setattr(checkpoint, "_read_state_actions", recording)
    state = read_log_state(Table(table), app_ids=APPS, partitions=True)
    assert state == expected and state.partitions
    assert decoded == [["sidecar"]]  # no protocol, metaData or txn column decoded for every file's row
