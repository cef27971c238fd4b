"""A Delta checkpoint, read for only the actions asked for: what the newest one says (which ones a log
listing holds: :mod:`airflow_provider_deltacc.contract.checkpoint_names`).

A v2 checkpoint's file actions may live in sidecar files (``_delta_log/_sidecars/``) its ``sidecar`` actions
name; a classic-named checkpoint may be a v2 one too (it then has ``sidecar`` rows).

Parquet files are read for the columns asked for only, and of those only the fields the reader uses
(:data:`STATE_FIELDS`): ``protocol`` and ``metaData`` unless a checksum gave them, ``txn`` when a txn
identity is looked up, and ``add.partitionValues`` (with ``add.path`` when a later commit removes files) when
the partitions are, its keys and values as dictionaries; sidecars hold only file actions, so they are opened
only then. A checkpoint has a row per file and a few rows of other actions: only the row groups the
statistics (their null counts) say hold any of them are read, and there the non-file actions are decoded
from their pages' level runs (:mod:`~airflow_provider_deltacc.delta_log.sparse_rows`), which skip a run of
file rows in one step, where pyarrow would decode every field for every row (the writers put these rows
last, delta-rs, or where their null path hashes among the snapshot's partitions, delta-spark, so stopping
early would not help). A page that module does not decode leaves the columns to pyarrow. The file actions
are read with pyarrow, but for a table with one partition column asked for its partitions only, whose
distinct values come from the pages of its maps
(:mod:`~airflow_provider_deltacc.delta_log.partition_pages`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_deltacc.contract.checkpoint_names import Checkpoint
from airflow_provider_deltacc.contract.exceptions import UnsupportedLog
from airflow_provider_deltacc.delta_log.log_storage import LogFiles
from airflow_provider_deltacc.delta_log.partition_pages import single_column_values
from airflow_provider_deltacc.delta_log.sparse_rows import sparse_struct_rows

SIDECAR_DIR = "_sidecars"
#: For each non-file action column, a field every such action has: its null count in a row group's
#: statistics says how many of the row group's rows do not hold the action.
PRESENCE_FIELD = {"protocol": "minReaderVersion", "metaData": "id", "txn": "appId", "sidecar": "path"}
#: The page reader (:mod:`~airflow_provider_deltacc.delta_log.sparse_rows`) decodes an action column that
#: holds at most this many rows of the row groups read, or one per ``ROWS_PER_ACTION`` of their rows; past
#: that, pyarrow's decoding of every row costs less: delta-spark scatters the actions' rows among the files,
#: and each scattered row costs the page reader a few microseconds (5,000 txn identities among 100,000
#: files: 41 ms against pyarrow's 4).
FEW_ACTION_ROWS = 16
ROWS_PER_ACTION = 1000
#: The fields of each non-file action the reader uses; only these are decoded from a parquet checkpoint.
STATE_FIELDS = {
    "protocol": ("minReaderVersion", "minWriterVersion", "readerFeatures", "writerFeatures"),
    "metaData": ("schemaString", "partitionColumns", "configuration"),
    "txn": ("appId", "version"),
    "sidecar": ("path",),
}


@dataclass
class CheckpointActions:
    """What a checkpoint says, of what was asked.

    :param protocol: its ``protocol`` action.
    :param metadata: its ``metaData`` action (from a parquet file, only the fields in :data:`STATE_FIELDS`).
    :param txns: the version recorded for each txn app id.
    :param adds: its ``add`` column's asked fields, as arrow struct arrays (from parquet files); a null row
        holds another action.
    :param add_rows: its ``add`` actions as dicts (from a JSON v2 checkpoint).
    :param one_column_values: for each parquet file whose every ``add`` names one partition column, that
        column and its distinct values, read instead of ``adds``
        (:func:`~airflow_provider_deltacc.delta_log.partition_pages.single_column_values`).
    """

    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: dict[str, int] = field(default_factory=dict)
    adds: list[Any] = field(default_factory=list)
    add_rows: list[dict[str, Any]] = field(default_factory=list)
    one_column_values: list[tuple[str, set[str | None]]] = field(default_factory=list)


def read_checkpoint(
    files: LogFiles,
    checkpoint: Checkpoint,
    *,
    txn: bool,
    add_columns: tuple[str, ...] = (),
    state: bool = True,
) -> CheckpointActions:
    """Read a checkpoint for its protocol, metadata and, as asked, txn versions and add actions.

    :param files: the log folder.
    :param checkpoint: the checkpoint.
    :param txn: read the ``txn`` actions.
    :param add_columns: the fields of the ``add`` actions to read (``partitionValues``, ``path``); none
        leaves the file actions and the sidecars unread.
    :param state: read the ``protocol`` and ``metaData`` actions of a parquet checkpoint; False when they
        are known already (a checksum gave them), which saves decoding those columns for every file's row.
    :raises UnsupportedLog: for a sidecar outside ``_delta_log/_sidecars``.
    """
    actions = CheckpointActions()
    sidecars: list[str] = []
    for name in checkpoint.files:
        if name.endswith(".json"):
            sidecars += _read_json(files.read(name), actions, txn=txn, adds=bool(add_columns))
        else:
            top = (["protocol", "metaData"] if state else []) + ["sidecar"] + (["txn"] if txn else [])
            sidecars += _read_parquet(files, name, actions, columns=top, add_columns=add_columns)
    if add_columns:
        for sidecar in sidecars:
            _read_parquet(files, sidecar, actions, columns=[], add_columns=add_columns)
    return actions


def _sidecar_name(path: str) -> str:
    if "/" in path or ":" in path:
        raise UnsupportedLog(f"a sidecar named by a path the log reader does not resolve: {path}")
    return f"{SIDECAR_DIR}/{path}"


def _read_json(data: bytes, actions: CheckpointActions, *, txn: bool, adds: bool) -> list[str]:
    sidecars = []
    for line in data.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "protocol" in action:
            actions.protocol = action["protocol"]
        elif "metaData" in action:
            actions.metadata = action["metaData"]
        elif "txn" in action and txn:
            actions.txns[str(action["txn"]["appId"])] = int(action["txn"]["version"])
        elif "sidecar" in action:
            sidecars.append(_sidecar_name(str(action["sidecar"]["path"])))
        elif "add" in action and adds:
            actions.add_rows.append(action["add"])
    return sidecars


def _read_parquet(
    files: LogFiles,
    name: str,
    actions: CheckpointActions,
    *,
    columns: list[str],
    add_columns: tuple[str, ...],
) -> list[str]:
    """Read one parquet file of a checkpoint (``columns``: the non-file actions to read) or a sidecar (none);
    the sidecars it names."""
    import pyarrow.parquet as pq

    with files.open_input(name) as source:
        parquet = pq.ParquetFile(source)
        one_column = single_column_values(parquet, source) if add_columns == ("partitionValues",) else None
        if one_column is not None:
            actions.one_column_values.append(one_column)
            add_columns = ()
        if add_columns:
            # The partition values' keys and values read as dictionaries: a table has few distinct ones, and
            # the writers' dictionary pages then decode into an entry per distinct string instead of one per
            # file. The map's leaves are named as its writer named them, so they are found in the footer.
            metadata = parquet.metadata
            leaves = [
                metadata.schema.column(i).path
                for i in range(metadata.num_columns)
                if metadata.schema.column(i).path.startswith("add.partitionValues.")
            ]
            parquet = pq.ParquetFile(source, metadata=metadata, read_dictionary=leaves or None)
        present = set(parquet.schema_arrow.names)
        columns = [c for c in columns if c in present]
        sidecars = _read_state_actions(parquet, source, columns, actions) if columns else []
        if "add" in present and add_columns:
            fields = _present_fields(parquet.schema_arrow, "add", add_columns)
            if fields:
                actions.adds += _read_adds(parquet, fields)
    return sidecars


def _read_adds(parquet: Any, fields: list[str]) -> list[Any]:
    """The ``add`` column's ``fields``, a struct array per row group that holds an add (pyarrow reads nested
    dictionaries one row group at a time)."""
    found = []
    for group in range(parquet.num_row_groups):
        adds = parquet.read_row_group(group, columns=fields, use_threads=False).column("add")
        if adds.null_count < len(adds):
            found.append(adds)
    return found


def _read_state_actions(
    parquet: Any, source: Any, columns: list[str], actions: CheckpointActions
) -> list[str]:
    """Read the non-file actions of ``columns`` from the row groups that hold any; a column no row group
    holds (the ``sidecar`` of a classic checkpoint, the ``txn`` of a table without identities) is not
    decoded at all. The sidecars named."""
    schema = parquet.schema_arrow
    leaves = {column: _present_fields(schema, column, STATE_FIELDS[column]) for column in columns}
    holding = _row_groups_holding(parquet.metadata, [column for column in columns if leaves[column]])
    columns = [column for column, (groups, _) in holding.items() if groups]
    if not columns:
        return []
    groups = sorted({group for column in columns for group in holding[column][0]})
    names = {column: [leaf.split(".", 1)[1] for leaf in leaves[column]] for column in columns}
    found = None
    if _few_enough(parquet.metadata, groups, [holding[column][1] for column in columns]):
        found = sparse_struct_rows(parquet, source, groups, names)
    if found is None:
        found = _decoded_rows(parquet, groups, [leaf for column in columns for leaf in leaves[column]])
    if found.get("protocol"):
        actions.protocol = found["protocol"][-1]
    if found.get("metaData"):
        actions.metadata = _plain_maps(found["metaData"][-1])
    actions.txns.update({str(row["appId"]): int(row["version"]) for row in found.get("txn", ())})
    return [_sidecar_name(str(row["path"])) for row in found.get("sidecar", ())]


def _decoded_rows(parquet: Any, groups: list[int], fields: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The non-null rows of each struct column of ``fields`` (dotted paths), decoded by pyarrow for every
    row of the row groups."""
    import pyarrow.compute as pc

    table = parquet.read_row_groups(groups, columns=fields, use_threads=False)
    found = {}
    for column in dict.fromkeys(path.split(".", 1)[0] for path in fields):
        values = table.column(column)
        found[column] = values.filter(pc.is_valid(values)).to_pylist()
    return found


def _present_fields(schema: Any, column: str, names: tuple[str, ...]) -> list[str]:
    """The fields ``names`` of the struct ``column`` that the parquet schema has, as the dotted paths pyarrow
    reads.

    :raises UnsupportedLog: when the column is not a struct, as no writer makes it.
    """
    kind = schema.field(column).type
    if not hasattr(kind, "get_field_index"):
        raise UnsupportedLog(f"a checkpoint whose {column} column is not a struct: {kind}")
    return [f"{column}.{name}" for name in names if kind.get_field_index(name) >= 0]


def _row_groups_holding(metadata: Any, columns: list[str]) -> dict[str, tuple[list[int], int | None]]:
    """For each of ``columns``, the row groups with a row holding its action and how many rows hold it
    there, by the statistics' null counts of a field every such action has; every row group, and no count,
    for a column that field or a null count is missing for. One pass over the footer's schema for all the
    columns."""
    presence = {f"{column}.{PRESENCE_FIELD[column]}": column for column in columns}
    positions: dict[str, int] = {}
    for i in range(metadata.num_columns):
        column = presence.get(metadata.schema.column(i).path)
        if column is not None:
            positions[column] = i
    every = list(range(metadata.num_row_groups))
    holding: dict[str, tuple[list[int], int | None]] = {}
    for column in columns:
        position = positions.get(column)
        groups: list[int] = []
        held: int | None = 0
        for index in every:
            group = metadata.row_group(index)
            stats = None if position is None else group.column(position).statistics
            if stats is None or not stats.has_null_count:
                groups, held = list(every), None
                break
            if stats.null_count < group.num_rows:
                groups.append(index)
                held = (held or 0) + group.num_rows - stats.null_count
        holding[column] = (groups, held)
    return holding


def _few_enough(metadata: Any, groups: list[int], held: list[int | None]) -> bool:
    """Whether each action column holds few enough rows of ``groups`` for the page reader
    (:data:`FEW_ACTION_ROWS`); not when a count is unknown."""
    rows = sum(metadata.row_group(group).num_rows for group in groups)
    return all(count is not None and count <= max(FEW_ACTION_ROWS, rows // ROWS_PER_ACTION) for count in held)


def _plain_maps(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A ``metaData`` row of parquet with its maps (lists of key/value pairs in arrow) as dicts."""
    plain = dict(metadata)
    if isinstance(plain.get("configuration"), list):
        plain["configuration"] = dict(plain["configuration"])
    form = plain.get("format")
    if isinstance(form, Mapping) and isinstance(form.get("options"), list):
        plain["format"] = {**form, "options": dict(form["options"])}
    return plain
