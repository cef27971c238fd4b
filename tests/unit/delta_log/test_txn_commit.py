"""A skipped duplicate's commit, found by bisecting the versions' checksum files (a few hundred bytes each)
instead of reading every commit file since (one may hold a row for every file of the table), and confirmed
by reading the one commit it points to; whatever the checksums cannot tell is left to the scan of the commit
files. Tables written by delta-rs, with the checksums delta-spark would write beside each commit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.checksum import checksum_name
from airflow_provider_deltacc.delta_log.fast_path import find_committed_version
from airflow_provider_deltacc.delta_log.log_storage import LocalLogFiles
from airflow_provider_deltacc.delta_log.txn_commit import (
    COMMIT_HEAD_BYTES,
    DEFAULT_CHECKPOINT_INTERVALS,
    checkpoint_intervals,
    listed_before,
    version_by_checksums,
    version_by_scan,
)
from tests.unit.delta_log.test_checksum import APPS, _log, _table, _write_checksum

pytestmark = pytest.mark.unit

COMMITS = 12


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = _table(tmp_path_factory.mktemp("txn-commit") / "t", COMMITS)
    for version in range(COMMITS):
        _write_checksum(path, version)
    return path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the log files read."""
    names: list[str] = []
    real = LocalLogFiles.read

    def read(self: LocalLogFiles, name: str) -> bytes:
        names.append(name)
        return real(self, name)

    monkeypatch.setattr(LocalLogFiles, "read", read)
    return names


@pytest.fixture
def heads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the commit files the scan reads."""
    names: list[str] = []
    real = LocalLogFiles.read_head

    def read_head(self: LocalLogFiles, name: str, size: int) -> bytes:
        names.append(name)
        return real(self, name, size)

    monkeypatch.setattr(LocalLogFiles, "read_head", read_head)
    return names


@pytest.mark.parametrize("version", [0, 1, 5, 10, 11])
def test_the_checksums_point_to_the_commit_that_recorded_the_identity(table: str, version: int) -> None:
    files = LocalLogFiles(str(_log(table)))
    assert version_by_checksums(files, APPS[version % 2], version, COMMITS - 1) == version


def test_a_duplicate_reads_a_few_checksums_and_one_commit_file(table: str, reads: list[str]) -> None:
    assert find_committed_version(Table(table), APPS[1], 3, COMMITS - 1) == 3
    commits = [name for name in reads if name.endswith(".json")]
    checksums = [name for name in reads if name.endswith(".crc")]
    assert commits == [f"{3:020d}.json"], reads
    assert len(checksums) <= 5, reads  # about log2(12) + 1, against 9 commit files read newest first


def test_an_identity_the_checksums_do_not_list_at_that_version_is_left_to_the_scan(table: str) -> None:
    files = LocalLogFiles(str(_log(table)))
    assert version_by_checksums(files, APPS[1], 4, COMMITS - 1) is None  # dag/b/0 has odd versions only
    assert version_by_checksums(files, APPS[2], 1, COMMITS - 1) is None  # never recorded
    assert find_committed_version(Table(table), APPS[1], 4, COMMITS - 1) is None


def test_a_missing_checksum_or_one_without_identities_leaves_it_to_the_scan(
    tmp_path: Path, reads: list[str]
) -> None:
    path = _table(tmp_path / "t", 6)
    for version in range(6):
        _write_checksum(path, version, with_txns=version != 2)
    files = LocalLogFiles(str(_log(path)))
    assert version_by_checksums(files, APPS[1], 1, 5) is None  # bisecting reads version 2's
    assert find_committed_version(Table(path), APPS[1], 1, 5) == 1  # the scan answers
    (_log(path) / checksum_name(2)).unlink()
    assert version_by_checksums(files, APPS[1], 1, 5) is None


def test_checksums_that_point_elsewhere_are_not_believed(tmp_path: Path) -> None:
    """Identities that expired (``delta.setTransactionRetentionDuration``) can make the checksums point to a
    commit that did not record the identity: its commit file is read, and the scan answers."""
    path = _table(tmp_path / "t", 6)
    for version in range(6):
        _write_checksum(path, version)
    claimed = _log(path) / checksum_name(2)
    content = json.loads(claimed.read_text())
    content["setTransactions"] = [{"appId": APPS[1], "version": 3, "lastUpdated": 1}]
    claimed.write_text(json.dumps(content))
    files = LocalLogFiles(str(_log(path)))
    assert version_by_checksums(files, APPS[1], 3, 5) == 2  # what the checksums say
    assert find_committed_version(Table(path), APPS[1], 3, 5) == 3  # what the log says


def test_versions_a_log_cleanup_deleted_are_passed_over_toward_the_kept_history(
    tmp_path: Path, reads: list[str]
) -> None:
    path = _table(tmp_path / "t", COMMITS)
    for version in range(COMMITS):
        _write_checksum(path, version)
    for version in range(5):  # Delta's cleanup: the oldest versions, commit and checksum alike
        (_log(path) / f"{version:020d}.json").unlink()
        (_log(path) / checksum_name(version)).unlink()
    files = LocalLogFiles(str(_log(path)))
    for version in (5, 6, 8, 11):
        assert version_by_checksums(files, APPS[version % 2], version, COMMITS - 1) == version
    reads.clear()
    assert find_committed_version(Table(path), APPS[1], 7, COMMITS - 1) == 7
    assert [name for name in reads if name.endswith(".json")] == [f"{7:020d}.json"], reads
    # Recorded by version 4, cleaned up since: the checksums point to the first version kept, which still
    # lists it, and its commit file says it did not record it.
    assert version_by_checksums(files, APPS[0], 4, COMMITS - 1) == 5
    assert find_committed_version(Table(path), APPS[0], 4, COMMITS - 1) is None
    assert version_by_checksums(files, APPS[1], 3, COMMITS - 1) is None  # version 5 lists it at 5 already


def _long_commit(path: str, version: int, txn: dict[str, object] | None) -> None:
    """A commit of a line per file, longer than the search's head, with ``txn`` as its last line."""
    lines = [json.dumps({"commitInfo": {"operation": "WRITE"}})]
    lines += [json.dumps({"add": {"path": f"part-{i:06d}.parquet", "size": i}}) for i in range(2000)]
    lines += [json.dumps({"txn": txn})] if txn else []
    (_log(path) / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
    assert (_log(path) / f"{version:020d}.json").stat().st_size > COMMIT_HEAD_BYTES


def test_without_checksums_a_commit_longer_than_its_head_is_read_after_the_others(
    tmp_path: Path, reads: list[str], heads: list[str]
) -> None:
    path = _table(tmp_path / "t", 6)  # delta-rs: no checksums
    _long_commit(path, 6, None)
    assert find_committed_version(Table(path), APPS[1], 1, 6) == 1
    assert heads == [f"{v:020d}.json" for v in (6, 5, 4, 3, 2, 1)]
    assert not [name for name in reads if name.endswith(".json")], "the long commit was read only to its head"
    # The identity in the long commit, past its head: found once the shorter commits said no.
    _long_commit(path, 7, {"appId": "bulk/load", "version": 3})
    heads.clear()
    assert find_committed_version(Table(path), "bulk/load", 3, 7) == 7
    assert heads == [f"{v:020d}.json" for v in range(7, -1, -1)]
    assert [name for name in reads if name.endswith(".json")] == [f"{7:020d}.json"]  # not 6: it was newer


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """24 appends, ``APPS[i % 2]`` version ``i``, without checksums; checkpoints at 10 and 20 (where
    delta-spark puts them at an interval of 10) and at 14 (where delta-rs puts one at an interval of 5)."""
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    path = str(tmp_path_factory.mktemp("checkpointed") / "t")
    for i in range(24):
        rows = pa.table({"id": pa.array([i], pa.int64())})
        properties = CommitProperties(app_transactions=[Transaction(app_id=APPS[i % 2], version=i)])
        write_deltalake(path, rows, mode="append", commit_properties=properties)
        if i in (10, 14, 20):
            DeltaTable(path).create_checkpoint()
    return path


@pytest.mark.parametrize(
    ("txn_version", "found", "commits_read"),
    [
        (1, None, []),  # checkpoint 10 lists it: older than the 5 commits the scan reads, none is read
        (21, 21, [23, 22, 21]),  # checkpoint 10 lists 9: recorded later, the scan finds it
        (17, None, [23, 22, 21, 20, 19]),  # recorded between the checkpoint and the scan: out of its reach
    ],
)
def test_a_checkpoint_older_than_the_scan_that_lists_the_identity_spares_the_scan(
    checkpointed: str, heads: list[str], txn_version: int, found: int | None, commits_read: list[int]
) -> None:
    files = LocalLogFiles(str(_log(checkpointed)))
    # The scan reads versions 19-23; the newest checkpoint before 19 at an interval of 10 is version 10.
    assert version_by_scan(files, APPS[1], txn_version, 23, max_versions=5) == found
    assert heads == [f"{v:020d}.json" for v in commits_read]


def test_where_the_interval_puts_no_checkpoint_the_scan_answers(checkpointed: str, heads: list[str]) -> None:
    files = LocalLogFiles(str(_log(checkpointed)))
    assert checkpoint_intervals({"delta.checkpointInterval": "7"}) == (7,)
    assert checkpoint_intervals({"Delta.CheckpointInterval": "x"}) == DEFAULT_CHECKPOINT_INTERVALS
    # At an interval of 4 the checkpoint before 19 would be 16 or 15: none is there, all 5 commits are read.
    assert version_by_scan(files, APPS[1], 1, 23, intervals=(4,), max_versions=5) is None
    assert len(heads) == 5
    # A checkpoint that cannot be read is no answer either: the scan gives it.
    heads.clear()
    checkpoint = _log(checkpointed) / f"{10:020d}.checkpoint.parquet"
    saved = checkpoint.read_bytes()
    checkpoint.write_bytes(b"not parquet")
    try:
        assert version_by_scan(files, APPS[1], 1, 23, max_versions=5) is None
        assert len(heads) == 5
    finally:
        checkpoint.write_bytes(saved)
    assert listed_before(files, APPS[1], 13, 16, (5,))  # delta-rs's place: 14, not 15
    assert not listed_before(files, APPS[1], 15, 16, (5,))
    assert listed_before(files, APPS[1], 1, 19, DEFAULT_CHECKPOINT_INTERVALS)
    assert not listed_before(files, APPS[1], 11, 19, DEFAULT_CHECKPOINT_INTERVALS)  # listed at 9 there
    assert not listed_before(files, APPS[1], 1, 10, DEFAULT_CHECKPOINT_INTERVALS)  # before 10: version 0
