"""The provider's own reader of a table's ``_delta_log``, for the facts its JVM-free reads need: the newest
version, the protocol, the metadata (partition columns, properties, schema), the versions recorded for txn
app ids, the commits' ``commitInfo`` and, only when asked, the partitions that hold data.

delta-rs opens a ``DeltaTable`` with its whole file list, so its cost grows with the files; this reads the
latest version's checksum file when it answers (see :mod:`airflow_provider_deltacc.delta_log.checksum`),
else the newest checkpoint for only the columns asked for (see
:mod:`airflow_provider_deltacc.delta_log.checkpoint`) and the JSON commits after it. ``_last_checkpoint``
names where to start looking, and the folder's listing from there is what counts: a newer checkpoint or
commit than it names (a stale ``_last_checkpoint``) is used, a checkpoint it names that is gone or
incomplete is passed over.

delta-rs stays the reader of data, and of every log this does not read exactly: a reader feature it does not
know (``catalogManaged``, anything newer than protocol 3), partitions under column mapping (the log keys them
by physical name), a missing commit, a file it cannot parse, storage it has no file system for. Those are
read with delta-rs (:func:`log_state`, :func:`commit_infos`), the reason logged at debug; nothing is guessed.

Airflow-free and pyspark-free; pyarrow and deltalake are imported only when a log is read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from airflow_provider_deltacc.contract.exceptions import TableNotFoundError, UnsupportedLog
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.checkpoint import CheckpointActions, read_checkpoint
from airflow_provider_deltacc.delta_log.checksum import read_checksum
from airflow_provider_deltacc.delta_log.log_segment import (
    LogSegment,
    commit_name,
    commit_versions,
    forward_segment,
    listed_segment,
    no_commit,
)
from airflow_provider_deltacc.delta_log.log_storage import LogFiles, open_log_files
from airflow_provider_deltacc.delta_log.partition_values import PartitionValues, distinct_values, values_of

log = logging.getLogger(__name__)

#: Reader features whose tables this reader replays exactly: they change what a data file means or how a
#: checkpoint is laid out (``v2Checkpoint``), not which actions make the snapshot.
KNOWN_READER_FEATURES = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "typeWidening",
        "typeWidening-preview",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "variantType",
        "variantType-preview",
    }
)
_COLUMN_MAPPING_MODE = "delta.columnMapping.mode"

ReadBy = Literal["log-reader", "delta-rs"]
_T = TypeVar("_T")


@dataclass(frozen=True)
class LogState:
    """A table's latest snapshot, as far as the provider reads it.

    :param version: the table version.
    :param min_reader_version: the protocol's minimum reader version.
    :param min_writer_version: the protocol's minimum writer version.
    :param reader_features: the protocol's reader features.
    :param writer_features: the protocol's writer features.
    :param partition_columns: the partition columns, in table order.
    :param configuration: the table properties.
    :param schema_string: the table schema, as the log's JSON.
    :param txn_versions: the version recorded for each txn app id asked for, absent when none is.
    :param partitions: the distinct partition values of the table's files (``{column: value or None}``),
        when asked for; None otherwise.
    :param read_by: which reader read it.
    """

    version: int
    min_reader_version: int
    min_writer_version: int
    reader_features: frozenset[str]
    writer_features: frozenset[str]
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str]
    schema_string: str
    txn_versions: Mapping[str, int] = field(default_factory=dict)
    partitions: tuple[dict[str, str | None], ...] | None = None
    read_by: ReadBy = "log-reader"

    def schema_fields(self) -> list[dict[str, Any]]:
        """The schema's top-level fields, as the log's JSON spells them (``name``, ``type``, ``nullable``,
        ``metadata``; a nested type is an object)."""
        fields = json.loads(self.schema_string or "{}").get("fields") or []
        return [dict(f) for f in fields if isinstance(f, Mapping)]


def log_state(
    table: Table,
    storage_options: Mapping[str, str] | None = None,
    *,
    app_ids: Iterable[str] = (),
    partitions: bool = False,
) -> LogState:
    """The table's latest snapshot, read by the provider's reader or, where it cannot, by delta-rs.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options (None: the environment's).
    :param app_ids: txn app ids whose recorded versions to read.
    :param partitions: read the partitions that hold data (reads the file actions).
    :raises TableNotFoundError: when there is no Delta table there.
    :raises Exception: whatever delta-rs raises when it reads the log instead.
    """
    wanted = tuple(app_ids)
    return _ours_or_delta_rs(
        table,
        lambda: read_log_state(table, storage_options, app_ids=wanted, partitions=partitions),
        lambda: delta_rs_state(table, storage_options, app_ids=wanted, partitions=partitions),
    )


def commit_infos(
    table: Table, storage_options: Mapping[str, str] | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """The newest commits' ``commitInfo`` with their ``version``, newest first, like delta-rs's
    ``DeltaTable.history(limit)``; read by delta-rs where the provider's reader cannot.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options.
    :param limit: the most commits (None: every commit the log still holds).
    :raises TableNotFoundError: when there is no Delta table there.
    """
    return _ours_or_delta_rs(
        table,
        lambda: read_commit_infos(table, storage_options, limit),
        lambda: list(_delta_rs_table(table, storage_options).history(limit)),
    )


def _ours_or_delta_rs(table: Table, ours: Callable[[], _T], delta_rs: Callable[[], _T]) -> _T:
    """``ours()``, or ``delta_rs()`` when the log reader cannot read the log exactly (the reason at debug)."""
    try:
        return ours()
    except TableNotFoundError:
        raise
    except UnsupportedLog as exc:
        log.debug("the log of %s is read with delta-rs: %s", table, exc.reason)
    except Exception as exc:  # a log this cannot parse: delta-rs reads it, or says what is wrong
        log.debug("the log of %s is read with delta-rs: the log reader failed (%r)", table, exc)
    return delta_rs()


def _delta_rs_table(table: Table, storage_options: Mapping[str, str] | None) -> Any:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError as DeltaRsTableNotFound

    try:
        return DeltaTable(table.name, storage_options=dict(storage_options or {}) or None)
    except DeltaRsTableNotFound as exc:
        raise TableNotFoundError(f"no Delta table at {table}: {exc}") from None


def read_log_state(
    table: Table,
    storage_options: Mapping[str, str] | None = None,
    *,
    app_ids: Iterable[str] = (),
    partitions: bool = False,
) -> LogState:
    """The table's latest snapshot, read by the provider's reader only.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options.
    :param app_ids: txn app ids whose recorded versions to read.
    :param partitions: read the partitions that hold data.
    :raises UnsupportedLog: for a log this does not read exactly (see the module).
    :raises TableNotFoundError: when the location has no Delta log.
    """
    files = open_log_files(table, storage_options)
    segment = forward_segment(files)
    if segment is not None:
        try:
            return _state(files, segment, tuple(app_ids), partitions)
        except FileNotFoundError as exc:  # the checkpoint _last_checkpoint names is gone
            log.debug("the log of %s is read from its listing: %s", table, exc)
    return _state(files, listed_segment(files), tuple(app_ids), partitions)


def _state(files: LogFiles, segment: LogSegment, app_ids: tuple[str, ...], partitions: bool) -> LogState:
    checksum = None if segment.checksum_listed is False else read_checksum(files, segment.version)
    if checksum is not None and checksum.txns is None and app_ids:
        checksum = None
    if checksum is not None:
        answer = _answer(segment.version, checksum.protocol, checksum.metadata, checksum.txns or {}, app_ids)
        if not partitions:
            return answer
        metadata: Mapping[str, Any] = checksum.metadata
    commits = [_parse_commit(data) for data in segment.commits]
    removed = {path for commit in commits for path in commit.removed}
    state = CheckpointActions()
    if segment.checkpoint is not None:
        add_columns = ((("path",) if removed else ()) + ("partitionValues",)) if partitions else ()
        # With the checksum's protocol, metadata and txns, the checkpoint is read for its files only.
        known = checksum is not None
        state = read_checkpoint(
            files,
            segment.checkpoint,
            txn=bool(app_ids) and not known,
            add_columns=add_columns,
            state=not known,
        )
    if checksum is None:
        protocol, state_metadata, txns = state.protocol, state.metadata, dict(state.txns)
        for commit in commits:
            protocol = commit.protocol or protocol
            state_metadata = commit.metadata or state_metadata
            txns.update(commit.txns)
        if protocol is None or state_metadata is None:
            raise UnsupportedLog(f"no protocol or metadata by version {segment.version}")
        answer, metadata = _answer(segment.version, protocol, state_metadata, txns, app_ids), state_metadata
    if not partitions:
        return answer
    if answer.configuration.get(_COLUMN_MAPPING_MODE, "none").lower() != "none":
        raise UnsupportedLog("partitions under column mapping are keyed by physical names")
    return replace(answer, partitions=_partitions(metadata, state, commits, removed))


def _answer(
    version: int,
    protocol: Mapping[str, Any],
    metadata: Mapping[str, Any],
    txns: Mapping[str, int],
    app_ids: tuple[str, ...],
) -> LogState:
    """The snapshot at ``version`` with this protocol, metadata and txn versions (no partitions).

    :raises UnsupportedLog: for a protocol this reader does not replay exactly.
    """
    _check_protocol(protocol)
    return LogState(
        version=version,
        min_reader_version=int(protocol["minReaderVersion"]),
        min_writer_version=int(protocol["minWriterVersion"]),
        reader_features=frozenset(protocol.get("readerFeatures") or ()),
        writer_features=frozenset(protocol.get("writerFeatures") or ()),
        partition_columns=tuple(str(c) for c in metadata.get("partitionColumns") or ()),
        configuration={str(k): str(v) for k, v in (metadata.get("configuration") or {}).items()},
        schema_string=str(metadata.get("schemaString") or ""),
        txn_versions={app_id: txns[app_id] for app_id in app_ids if app_id in txns},
    )


def read_commit_infos(
    table: Table, storage_options: Mapping[str, str] | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """The newest commits' ``commitInfo`` with their ``version``, newest first, read by the provider's reader
    only: the commit files back from the newest, stopping at the first one the log no longer holds.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options.
    :param limit: the most commits (None: all).
    :raises UnsupportedLog: for storage this does not read.
    :raises TableNotFoundError: when the location has no Delta log.
    """
    files = open_log_files(table, storage_options)
    segment = forward_segment(files)
    known: dict[int, bytes] = {}
    if segment is not None:
        first = segment.version - len(segment.commits) + 1
        known = {first + i: data for i, data in enumerate(segment.commits)}
        newest = segment.version
    else:
        versions = commit_versions(files.names())
        if not versions:
            no_commit(files)
        newest = max(versions)
    rows: list[dict[str, Any]] = []
    version = newest
    while version >= 0 and (limit is None or len(rows) < limit):
        try:
            data = known[version] if version in known else files.read(commit_name(version))
        except FileNotFoundError:
            break
        info: dict[str, Any] = {}
        for line in data.splitlines():
            if b'"commitInfo"' in line[:64]:
                action = json.loads(line)
                if "commitInfo" in action:
                    info = dict(action["commitInfo"])
                    break
        rows.append({**info, "version": version})
        version -= 1
    return rows


def delta_rs_state(
    table: Table,
    storage_options: Mapping[str, str] | None = None,
    *,
    app_ids: Iterable[str] = (),
    partitions: bool = False,
) -> LogState:
    """The table's latest snapshot read by delta-rs (its whole file list loaded): the fallback.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options.
    :param app_ids: txn app ids whose recorded versions to read.
    :param partitions: read the partitions that hold data.
    :raises TableNotFoundError: when delta-rs finds no table there.
    """
    delta = _delta_rs_table(table, storage_options)
    protocol, metadata = delta.protocol(), delta.metadata()
    recorded = {app_id: delta.transaction_version(app_id) for app_id in app_ids}
    found: tuple[dict[str, str | None], ...] | None = None
    if partitions:
        found = tuple(
            {str(k): None if v is None else str(v) for k, v in p.items()} for p in delta.partitions()
        )
    return LogState(
        version=delta.version(),
        min_reader_version=int(protocol.min_reader_version),
        min_writer_version=int(protocol.min_writer_version),
        reader_features=frozenset(protocol.reader_features or ()),
        writer_features=frozenset(protocol.writer_features or ()),
        partition_columns=tuple(metadata.partition_columns),
        configuration=dict(metadata.configuration),
        schema_string=delta.schema().to_json(),
        txn_versions={app_id: int(v) for app_id, v in recorded.items() if v is not None},
        partitions=found,
        read_by="delta-rs",
    )


@dataclass(frozen=True)
class _Commit:
    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: dict[str, int] = field(default_factory=dict)
    #: (path, partition values) of each add, in order.
    added: tuple[tuple[str, dict[str, Any]], ...] = ()
    removed: frozenset[str] = frozenset()


def _parse_commit(data: bytes) -> _Commit:
    protocol = metadata = None
    txns: dict[str, int] = {}
    added: list[tuple[str, dict[str, Any]]] = []
    removed: set[str] = set()
    for line in data.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "add" in action:
            added.append((str(action["add"]["path"]), dict(action["add"].get("partitionValues") or {})))
        elif "remove" in action:
            removed.add(str(action["remove"]["path"]))
        elif "txn" in action:
            txns[str(action["txn"]["appId"])] = int(action["txn"]["version"])
        elif "metaData" in action:
            metadata = action["metaData"]
        elif "protocol" in action:
            protocol = action["protocol"]
    return _Commit(protocol, metadata, txns, tuple(added), frozenset(removed))


def _check_protocol(protocol: Mapping[str, Any]) -> None:
    reader = int(protocol.get("minReaderVersion", 0))
    if reader > 3:
        raise UnsupportedLog(f"reader version {reader}")
    unknown = sorted(set(protocol.get("readerFeatures") or ()) - KNOWN_READER_FEATURES)
    if reader == 3 and unknown:
        raise UnsupportedLog(f"reader features the log reader does not know: {', '.join(unknown)}")


def _partitions(
    metadata: Mapping[str, Any],
    checkpoint: CheckpointActions,
    commits: list[_Commit],
    removed: set[str],
) -> tuple[dict[str, str | None], ...]:
    """The distinct partition values of the snapshot's files: the checkpoint's adds less the files a later
    commit removed, and the later commits' adds still there."""
    columns = tuple(str(c) for c in metadata.get("partitionColumns") or ())
    live: dict[str, PartitionValues] = {}
    gone_from_checkpoint: set[str] = set()
    for commit in commits:
        for path in commit.removed:
            live.pop(path, None)
        gone_from_checkpoint |= commit.removed
        for path, values in commit.added:
            live[path] = values_of(values, columns)
    found = set(live.values())
    for row in checkpoint.add_rows:
        if str(row.get("path")) not in gone_from_checkpoint:
            found.add(values_of(row.get("partitionValues") or {}, columns))
    for adds in checkpoint.adds:
        found |= distinct_values(adds, columns, gone_from_checkpoint)
    for column, distinct in checkpoint.one_column_values:  # read only when no later commit removes a file
        if columns != (column,):
            raise UnsupportedLog(
                f"a checkpoint's files are partitioned by {column!r}, the table by {columns}"
            )
        found |= {(value,) for value in distinct}
    return tuple(dict(zip(columns, values, strict=True)) for values in sorted(found, key=_sort_key))


def _sort_key(values: PartitionValues) -> tuple[tuple[bool, str], ...]:
    return tuple((v is None, v or "") for v in values)
