"""A Delta checkpoint, read for only the actions asked for: what the newest one says (which ones a log
listing holds: :mod:`airflow_provider_deltacc.contract.checkpoint_names`).

A v2 checkpoint's file actions may live in sidecar files (``_delta_log/_sidecars/``) its ``sidecar`` actions
name; a classic-named checkpoint may be a v2 one too (it then has ``sidecar`` rows).

Parquet files are read with pyarrow for the columns asked for only: ``protocol`` and ``metaData`` always,
``txn`` when a txn identity is looked up, and ``add.partitionValues`` (with ``add.path`` when a later commit
removes files) when the partitions are; sidecars hold only file actions, so they are opened only then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_deltacc.contract.checkpoint_names import Checkpoint
from airflow_provider_deltacc.contract.exceptions import UnsupportedLog
from airflow_provider_deltacc.delta_log.log_storage import LogFiles

SIDECAR_DIR = "_sidecars"


@dataclass
class CheckpointActions:
    """What a checkpoint says, of what was asked.

    :param protocol: its ``protocol`` action.
    :param metadata: its ``metaData`` action.
    :param txns: the version recorded for each txn app id.
    :param adds: its ``add`` actions' asked columns, as arrow struct arrays (from parquet files).
    :param add_rows: its ``add`` actions as dicts (from a JSON v2 checkpoint).
    """

    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    txns: dict[str, int] = field(default_factory=dict)
    adds: list[Any] = field(default_factory=list)
    add_rows: list[dict[str, Any]] = field(default_factory=list)


def read_checkpoint(
    files: LogFiles, checkpoint: Checkpoint, *, txn: bool, add_columns: tuple[str, ...] = ()
) -> CheckpointActions:
    """Read a checkpoint for its protocol, metadata and, as asked, txn versions and add actions.

    :param files: the log folder.
    :param checkpoint: the checkpoint.
    :param txn: read the ``txn`` actions.
    :param add_columns: the fields of the ``add`` actions to read (``partitionValues``, ``path``); none
        leaves the file actions and the sidecars unread.
    :raises UnsupportedLog: for a sidecar outside ``_delta_log/_sidecars``.
    """
    actions = CheckpointActions()
    sidecars: list[str] = []
    for name in checkpoint.files:
        if name.endswith(".json"):
            sidecars += _read_json(files.read(name), actions, txn=txn, adds=bool(add_columns))
        else:
            sidecars += _read_parquet(files, name, actions, txn=txn, add_columns=add_columns, top=True)
    if add_columns:
        for sidecar in sidecars:
            _read_parquet(files, sidecar, actions, txn=False, add_columns=add_columns, top=False)
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
    txn: bool,
    add_columns: tuple[str, ...],
    top: bool,
) -> list[str]:
    """Read one parquet file of a checkpoint (``top``) or a sidecar; the sidecars it names."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with files.open_input(name) as source:
        parquet = pq.ParquetFile(source)
        present = set(parquet.schema_arrow.names)
        wanted = ["protocol", "metaData", "sidecar"] + (["txn"] if txn else []) if top else []
        columns = [c for c in wanted if c in present]
        if "add" in present:
            add_type = parquet.schema_arrow.field("add").type
            columns += [f"add.{c}" for c in add_columns if add_type.get_field_index(c) >= 0]
        if not columns:
            return []
        table = parquet.read(columns=columns, use_threads=False)
    sidecars: list[str] = []
    for column in set(table.column_names):
        values = table.column(column)
        present_values = values.filter(pc.is_valid(values))
        if column == "add":
            if len(present_values):
                actions.adds.append(present_values)
            continue
        rows = present_values.to_pylist()
        if column == "protocol" and rows:
            actions.protocol = rows[-1]
        elif column == "metaData" and rows:
            actions.metadata = _plain_maps(rows[-1])
        elif column == "txn":
            actions.txns.update({str(row["appId"]): int(row["version"]) for row in rows})
        elif column == "sidecar":
            sidecars += [_sidecar_name(str(row["path"])) for row in rows]
    return sidecars


def _plain_maps(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A ``metaData`` row of parquet with its maps (lists of key/value pairs in arrow) as dicts."""
    plain = dict(metadata)
    if isinstance(plain.get("configuration"), list):
        plain["configuration"] = dict(plain["configuration"])
    form = plain.get("format")
    if isinstance(form, Mapping) and isinstance(form.get("options"), list):
        plain["format"] = {**form, "options": dict(form["options"])}
    return plain
