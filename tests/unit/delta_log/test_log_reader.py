"""The provider's own Delta-log reader against delta-rs, on tables delta-rs writes: every answer (version,
protocol, metadata, schema, txn versions, partitions, commit infos) equals delta-rs's, with and without
checkpoints, past ten of them, with a stale or a missing ``_last_checkpoint``, multi-part and v2 checkpoints
with sidecars, on local disk and on S3; and what it does not read exactly falls back to delta-rs."""

from __future__ import annotations

import json
import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_deltacc.contract.exceptions import TableNotFoundError, UnsupportedLog
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log import checkpoint, log_reader
from airflow_provider_deltacc.delta_log.log_reader import (
    LogState,
    commit_infos,
    log_state,
    read_log_state,
)
from airflow_provider_deltacc.delta_log.log_storage import ArrowLogFiles, LocalLogFiles, open_log_files
from tests.support.log_reader_checks import assert_reads_as_delta_rs, day, partition_set
from tests.support.s3_server import S3Server

pytestmark = pytest.mark.unit

APPS = ("dag/task/0", "dag/other/0", "never/recorded")


def _write(path: Path | str, i: int, *, mode: str = "append", **options: Any) -> None:
    from deltalake import CommitProperties, Transaction, write_deltalake

    rows = pa.table(
        {"id": pa.array([i], pa.int64()), "day": [day(i % 3)], "n": pa.array([i % 2], pa.int32())}
    )
    app = APPS[i % 2]
    properties = CommitProperties(
        app_transactions=[Transaction(app_id=app, version=i)], custom_metadata={"userMetadata": f"tag:{i}"}
    )
    write_deltalake(
        str(path), rows, mode=mode, partition_by=["day", "n"], commit_properties=properties, **options
    )  # type: ignore[call-overload]


def _checkpoint(path: Path | str, **options: Any) -> None:
    from deltalake import DeltaTable

    DeltaTable(str(path), **options).create_checkpoint()


def _table(path: Path, commits: int, *, checkpoint_every: int = 0) -> str:
    for i in range(commits):
        _write(path, i)
        if checkpoint_every and (i + 1) % checkpoint_every == 0:
            _checkpoint(path)
    return str(path)


def _log(path: str) -> Path:
    return Path(path) / "_delta_log"


def test_a_log_without_a_checkpoint_reads_as_delta_rs_reads_it(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 5)
    state = assert_reads_as_delta_rs(table, APPS)
    assert state.version == 4 and state.txn_versions == {"dag/task/0": 4, "dag/other/0": 3}


def test_a_checkpoint_and_the_commits_after_it_read_as_delta_rs_reads_them(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 6, checkpoint_every=4)
    assert sorted(p.name for p in _log(table).glob("*.checkpoint.parquet")) == [
        f"{3:020d}.checkpoint.parquet"
    ]
    assert_reads_as_delta_rs(table, APPS)


def test_the_newest_of_many_checkpoints_is_read(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 7, checkpoint_every=2)
    for old in (1, 3):  # older checkpoints that no longer parse: only the newest may be opened
        (_log(table) / f"{old:020d}.checkpoint.parquet").write_bytes(b"not parquet")
    assert_reads_as_delta_rs(table, APPS)


def test_a_table_past_ten_checkpoints_with_removed_files_reads_as_delta_rs_reads_it(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 24, checkpoint_every=2)
    _write(table, 24, mode="overwrite")  # removes every file: one partition left
    _write(table, 25)
    assert len(list(_log(table).glob("*.checkpoint.parquet"))) == 12
    state = assert_reads_as_delta_rs(table, APPS)
    assert partition_set(state) == {
        frozenset({("day", day(0)), ("n", "0")}),
        frozenset({("day", day(1)), ("n", "1")}),
    }


def test_files_removed_after_the_checkpoint_leave_its_partitions(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    table = _table(tmp_path / "t", 6, checkpoint_every=6)
    DeltaTable(table).delete(f"day = '{day(0)}'")
    state = assert_reads_as_delta_rs(table, APPS)
    assert all(p["day"] != day(0) for p in state.partitions or ())


def _rewrite_checkpoint(
    table: str, version: int, *, other_actions_first: bool, row_group_rows: int, statistics: bool
) -> None:
    """The classic checkpoint at ``version`` rewritten with its non-file actions before or after its files,
    in row groups of ``row_group_rows``, with or without column statistics."""
    path = _log(table) / f"{version:020d}.checkpoint.parquet"
    rows = pq.read_table(path)
    is_file = pa.compute.is_valid(rows.column("add"))
    if "remove" in rows.column_names:
        is_file = pa.compute.or_(is_file, pa.compute.is_valid(rows.column("remove")))
    files, others = rows.filter(is_file), rows.filter(pa.compute.invert(is_file))
    ordered = pa.concat_tables([others, files] if other_actions_first else [files, others])
    pq.write_table(ordered, path, row_group_size=row_group_rows, write_statistics=statistics)


def _decoded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[int], list[str]]]:
    """The row groups and the fields (``column.field``) of every read of a parquet checkpoint's non-file
    actions, by the page reader or by pyarrow."""
    decoded: list[tuple[list[int], list[str]]] = []
    by_pages, by_pyarrow = checkpoint.sparse_struct_rows, checkpoint._decoded_rows

    def pages(parquet: Any, source: Any, groups: list[int], fields: dict[str, list[str]]) -> Any:
        decoded.append(
            (list(groups), [f"{column}.{name}" for column, names in fields.items() for name in names])
        )
        return by_pages(parquet, source, groups, fields)

    def pyarrow(parquet: Any, groups: list[int], fields: list[str]) -> Any:
        decoded.append((list(groups), list(fields)))
        return by_pyarrow(parquet, groups, fields)

    monkeypatch.setattr(checkpoint, "sparse_struct_rows", pages)
    monkeypatch.setattr(checkpoint, "_decoded_rows", pyarrow)
    return decoded


@pytest.mark.parametrize(
    ("other_actions_first", "statistics", "decoded_groups"),
    [(True, True, [0]), (False, True, [4]), (False, False, [0, 1, 2, 3, 4])],
    ids=["first", "last", "last-without-statistics"],
)
def test_only_the_row_groups_holding_a_checkpoints_non_file_actions_are_decoded(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    other_actions_first: bool,
    statistics: bool,
    decoded_groups: list[int],
) -> None:
    table = _table(tmp_path / "t", 30, checkpoint_every=30)  # protocol, metadata, 2 txns and 30 files
    before = read_log_state(Table(table), app_ids=APPS, partitions=True)
    _rewrite_checkpoint(
        table, 29, other_actions_first=other_actions_first, row_group_rows=7, statistics=statistics
    )
    decoded = _decoded(monkeypatch)
    assert read_log_state(Table(table), app_ids=APPS, partitions=True) == before
    # 34 rows in row groups of 7: the four non-file actions are in the first or the last; without
    # statistics nothing says where they are.
    assert [groups for groups, _ in decoded] == [decoded_groups]


def test_a_checkpoints_non_file_actions_are_decoded_for_the_fields_the_reader_uses_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path / "t", 12, checkpoint_every=10)
    decoded = _decoded(monkeypatch)
    assert_reads_as_delta_rs(table, APPS)
    # Not metaData's id, name, description, format or creation time, nor txn.lastUpdated, nor the sidecar
    # column at all (its statistics say no row holds one).
    assert sorted(decoded[0][1]) == [
        "metaData.configuration",
        "metaData.partitionColumns",
        "metaData.schemaString",
        "protocol.minReaderVersion",
        "protocol.minWriterVersion",
        "protocol.readerFeatures",
        "protocol.writerFeatures",
        "txn.appId",
        "txn.version",
    ]


def _listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every listing of a local ``_delta_log``, as the folder listed."""
    listed: list[str] = []
    real = LocalLogFiles.names

    def names(self: LocalLogFiles) -> list[str]:
        listed.append(self.location)
        return real(self)

    monkeypatch.setattr(LocalLogFiles, "names", names)
    return listed


@pytest.mark.parametrize("parts", [None, 3])
def test_the_latest_snapshot_is_read_forward_from_last_checkpoint_without_a_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int | None
) -> None:
    table = _table(tmp_path / "t", 10, checkpoint_every=4)  # checkpoints at 3 and 7, commits 8 and 9 after
    if parts:
        _split_into_parts(table, 7, parts)
        (_log(table) / "_last_checkpoint").write_text(json.dumps({"version": 7, "size": 20, "parts": parts}))
    listed = _listings(monkeypatch)
    state = assert_reads_as_delta_rs(table, APPS)  # the state, and the commit infos back to version 0
    assert state.version == 9 and listed == []


def test_a_last_checkpoint_far_behind_the_log_is_read_from_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_provider_deltacc.delta_log import log_segment

    table = _table(tmp_path / "t", 10, checkpoint_every=4)
    (_log(table) / "_last_checkpoint").write_text(json.dumps({"version": 3, "size": 1}))
    monkeypatch.setattr(log_segment, "FORWARD_COMMITS", 2)  # 6 commits follow the checkpoint it names
    listed = _listings(monkeypatch)
    assert assert_reads_as_delta_rs(table, APPS).version == 9
    assert listed, "more commits than FORWARD_COMMITS after the named checkpoint: the listing finds 7's"


def test_a_checkpoint_at_the_newest_version_is_read_without_a_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path / "t", 9, checkpoint_every=3)  # checkpoints at 2, 5 and 8: none follows 8
    assert json.loads((_log(table) / "_last_checkpoint").read_text())["version"] == 8
    listed = _listings(monkeypatch)
    assert assert_reads_as_delta_rs(table, APPS).version == 8 and listed == []


def test_a_stale_last_checkpoint_is_passed_over_wherever_a_log_cleanup_stopped(tmp_path: Path) -> None:
    """``_last_checkpoint`` names the checkpoint at 2 though 5 and 8 exist, and a log cleanup (Delta's order:
    whole versions, oldest first) deleted the files before 8, stopped after any one of them."""
    template = _table(tmp_path / "template", 9, checkpoint_every=3)
    expected = assert_reads_as_delta_rs(template, APPS)  # with its partitions
    (_log(template) / "_last_checkpoint").write_text(json.dumps({"version": 2, "size": 1}))
    expired = sorted(
        (int(path.name[:20]), path.name) for path in _log(template).iterdir() if path.name[:20] < f"{8:020d}"
    )
    assert len(expired) == 8 + 2  # the commits before 8 and the checkpoints at 2 and 5
    for stopped_after in range(len(expired) + 1):
        table = tmp_path / f"cleaned-{stopped_after}"
        shutil.copytree(template, table)
        for _, name in expired[:stopped_after]:
            (_log(str(table)) / name).unlink()
        state = read_log_state(Table(str(table)), app_ids=APPS, partitions=True)
        assert state == expected, f"cleanup stopped after {expired[:stopped_after][-1:]}: {state}"


def test_a_last_checkpoint_naming_a_checkpoint_that_is_gone_is_passed_over(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 6, checkpoint_every=3)
    before = assert_reads_as_delta_rs(table, APPS)
    (_log(table) / f"{5:020d}.checkpoint.parquet").unlink()
    assert json.loads((_log(table) / "_last_checkpoint").read_text())["version"] == 5
    # As Delta does: the older checkpoint and the commits after it (delta-rs 1.6.6 refuses the table).
    assert read_log_state(Table(table), app_ids=APPS, partitions=True) == before


def _split_into_parts(table: str, version: int, parts: int) -> list[Path]:
    """The classic checkpoint at ``version`` rewritten as a multi-part one."""
    classic = _log(table) / f"{version:020d}.checkpoint.parquet"
    rows = pq.read_table(classic)
    classic.unlink()
    step = -(-rows.num_rows // parts)
    written = []
    for part in range(parts):
        name = _log(table) / f"{version:020d}.checkpoint.{part + 1:010d}.{parts:010d}.parquet"
        pq.write_table(rows.slice(part * step, step), name)
        written.append(name)
    return written


def test_a_multi_part_checkpoint_is_read_whole(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 8, checkpoint_every=4)
    _split_into_parts(table, 7, 3)
    (_log(table) / "_last_checkpoint").write_text(json.dumps({"version": 7, "size": 20, "parts": 3}))
    assert_reads_as_delta_rs(table, APPS)


def test_an_incomplete_multi_part_checkpoint_is_passed_over(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 8, checkpoint_every=4)
    _split_into_parts(table, 7, 3)[1].unlink()
    state = read_log_state(Table(table), app_ids=APPS)  # from the checkpoint at 3 and the commits after it
    assert state.version == 7 and state.txn_versions == {"dag/task/0": 6, "dag/other/0": 7}


def _as_v2(table: str, version: int, *, json_top: bool) -> None:
    """The classic checkpoint at ``version`` rewritten as a v2 one: its file actions in a sidecar, the rest in
    a top-level file (JSON or parquet) that names the sidecar."""
    classic = _log(table) / f"{version:020d}.checkpoint.parquet"
    rows = pq.read_table(classic)
    classic.unlink()
    sidecar = f"{uuid.uuid4()}.parquet"
    (_log(table) / "_sidecars").mkdir(exist_ok=True)
    files = rows.filter(pa.compute.is_valid(rows.column("add")))
    pq.write_table(files.select(["add", "remove"]), _log(table) / "_sidecars" / sidecar)
    top = _log(table) / f"{version:020d}.checkpoint.{uuid.uuid4()}.{'json' if json_top else 'parquet'}"
    others = rows.filter(pa.compute.invert(pa.compute.is_valid(rows.column("add"))))
    sidecar_row = {"path": sidecar, "sizeInBytes": 1, "modificationTime": 0, "tags": None}
    if json_top:
        lines = [{"checkpointMetadata": {"version": version}}, {"sidecar": sidecar_row}]
        for row in others.select(["protocol", "metaData", "txn"]).to_pylist():
            for key, value in row.items():
                if value is not None and key == "metaData":
                    value = {**value, "configuration": dict(value["configuration"])}
                    value["format"] = {**value["format"], "options": dict(value["format"]["options"])}
                if value is not None:
                    lines.append({key: value})
        top.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    else:
        columns = ["protocol", "metaData", "txn", "sidecar"]
        schema = pa.schema([rows.schema.field(c) for c in columns])
        top_rows = [*others.select(columns).to_pylist(), {"sidecar": sidecar_row}]
        pq.write_table(pa.Table.from_pylist(top_rows, schema=schema), top)


@pytest.mark.parametrize("json_top", [True, False], ids=["json", "parquet"])
def test_a_v2_checkpoint_with_sidecars_reads_as_the_classic_one_did(tmp_path: Path, json_top: bool) -> None:
    table = _table(tmp_path / "t", 6, checkpoint_every=4)
    (_log(table) / "_last_checkpoint").unlink()
    before = read_log_state(Table(table), app_ids=APPS, partitions=True)
    _as_v2(table, 3, json_top=json_top)
    for version in range(3):  # only the v2 checkpoint can answer now
        (_log(table) / f"{version:020d}.json").unlink()
    after = read_log_state(Table(table), app_ids=APPS, partitions=True)
    assert after == before and after.partitions


def test_a_sidecar_is_opened_only_for_the_partitions(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 4, checkpoint_every=4)
    _as_v2(table, 3, json_top=True)
    for sidecar in (_log(table) / "_sidecars").iterdir():
        sidecar.write_bytes(b"not parquet")
    assert read_log_state(Table(table), app_ids=APPS).txn_versions == {"dag/task/0": 2, "dag/other/0": 3}
    with pytest.raises(Exception, match=r"(?i)parquet"):
        read_log_state(Table(table), partitions=True)


def _commit(table: str, version: int, *actions: dict[str, Any]) -> None:
    text = "\n".join(json.dumps(a) for a in actions) + "\n"
    (_log(table) / f"{version:020d}.json").write_text(text)


def test_an_unknown_reader_feature_is_read_by_delta_rs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    table = _table(tmp_path / "t", 2)
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"]}
    _commit(table, 2, {"commitInfo": {"operation": "UPGRADE PROTOCOL"}}, {"protocol": protocol})
    with pytest.raises(UnsupportedLog, match="catalogManaged"):
        read_log_state(Table(table))
    sentinel = LogState(2, 3, 7, frozenset(), frozenset(), (), {}, "", read_by="delta-rs")
    monkeypatch.setattr(log_reader, "delta_rs_state", lambda *a, **k: sentinel)
    with caplog.at_level(logging.DEBUG, logger=log_reader.__name__):
        assert log_state(Table(table)) is sentinel
    assert "read with delta-rs: reader features the log reader does not know: catalogManaged" in caplog.text


def test_a_missing_commit_is_read_by_delta_rs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(tmp_path / "t", 4)
    (_log(table) / f"{1:020d}.json").unlink()
    with pytest.raises(UnsupportedLog, match="lacks commit 1"):
        read_log_state(Table(table))
    called: list[Table] = []
    monkeypatch.setattr(log_reader, "delta_rs_state", lambda table, *a, **k: called.append(table))
    log_state(Table(table))
    assert called == [Table(table)]


def test_a_checkpoint_that_does_not_parse_is_read_by_delta_rs(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 3, checkpoint_every=3)
    (_log(table) / f"{2:020d}.checkpoint.parquet").write_bytes(b"not parquet")
    with pytest.raises(Exception, match=r"(?i)parquet"):
        read_log_state(Table(table))
    with pytest.raises(Exception):  # noqa: B017 - delta-rs cannot read it either; it says why
        log_state(Table(table))


def test_partitions_under_column_mapping_are_read_by_delta_rs(tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 1)
    metadata = json.loads((_log(table) / f"{0:020d}.json").read_text().splitlines()[2])["metaData"]
    assert "schemaString" in metadata
    metadata["configuration"] = {"delta.columnMapping.mode": "name"}
    _commit(table, 1, {"commitInfo": {"operation": "SET TBLPROPERTIES"}}, {"metaData": metadata})
    assert read_log_state(Table(table)).configuration == {"delta.columnMapping.mode": "name"}
    with pytest.raises(UnsupportedLog, match="column mapping"):
        read_log_state(Table(table), partitions=True)


def test_a_path_without_a_table_is_no_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        log_state(Table(str(tmp_path / "nothing")))
    with pytest.raises(TableNotFoundError):
        commit_infos(Table(str(tmp_path / "nothing")))


@pytest.mark.parametrize(
    ("table", "options", "reason"),
    [
        ("gs://bucket/t", {}, "no file system"),
        ("hdfs://nn/t", {}, "no file system"),
        ("relative/t", {}, "no file system"),
        ("s3://bucket/t", {"AWS_PROFILE": "prod"}, "does not know: AWS_PROFILE"),
        ("s3://bucket/t", {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, "AWS_ALLOW_HTTP"),
        ("s3://bucket/t", {"timeout": "a while"}, "timeout"),
        ("abfss://c@acct.dfs.core.windows.net/t", {}, "without an account key"),
        ("abfss://c@acct.dfs.core.windows.net/t", {"AZURE_STORAGE_SAS_KEY": "x"}, "AZURE_STORAGE_SAS_KEY"),
    ],
)
def test_storage_it_has_no_file_system_for_is_left_to_delta_rs(
    table: str, options: dict[str, str], reason: str
) -> None:
    with pytest.raises(UnsupportedLog, match=reason):
        open_log_files(Table(table), options)


def test_a_table_on_s3_reads_as_delta_rs_reads_it(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = f"s3://{s3_server.new_bucket()}/orders"
    options = {**s3_server.storage_options(), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    for i in range(5):
        _write(table, i, storage_options=options)
        if i == 2:
            _checkpoint(table, storage_options=options)
    state = assert_reads_as_delta_rs(table, APPS, options)
    assert state.version == 4
    _checkpoint(table, storage_options=options)  # no commit follows the checkpoint _last_checkpoint names
    listed: list[str] = []
    real = ArrowLogFiles.names
    monkeypatch.setattr(ArrowLogFiles, "names", lambda files: listed.append(files.location) or real(files))
    assert assert_reads_as_delta_rs(table, APPS, options).version == 4 and listed == []
