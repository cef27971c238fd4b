"""The check every test of the provider's Delta-log reader makes: each of its answers, read by it alone (no
fallback), equals delta-rs's on the same table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, timedelta

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.log_reader import (
    LogState,
    delta_rs_state,
    read_commit_infos,
    read_log_state,
)

#: The day the tables' day partitions count back from, taken once: a run that crosses midnight keeps its days.
TODAY = date.today()


def day(offset: int) -> str:
    """The ISO day ``offset`` days before :data:`TODAY`: a day partition's value."""
    return (TODAY - timedelta(days=offset)).isoformat()


#: The answers of :class:`LogState` compared as they are (the schema and partitions are compared below).
COMPARED_FIELDS = (
    "version",
    "min_reader_version",
    "min_writer_version",
    "reader_features",
    "writer_features",
    "partition_columns",
    "configuration",
    "txn_versions",
)


def partition_set(state: LogState) -> set[frozenset[tuple[str, str | None]]]:
    """The state's partitions, in no order."""
    return {frozenset(p.items()) for p in state.partitions or ()}


def assert_reads_as_delta_rs(
    table: str, app_ids: Sequence[str], storage_options: Mapping[str, str] | None = None
) -> LogState:
    """Every answer of the reader (version, protocol, metadata, schema, txn versions of ``app_ids``,
    partitions, commit infos) equals delta-rs's on ``table``, with the partitions read and without; the
    reader's state.

    :param table: the table's path or URI.
    :param app_ids: the txn app ids whose versions are compared (some may be unrecorded).
    :param storage_options: delta-rs storage options.
    """
    from deltalake import DeltaTable

    options = dict(storage_options or {}) or None
    ours = read_log_state(Table(table), options, app_ids=app_ids, partitions=True)
    theirs = delta_rs_state(Table(table), options, app_ids=app_ids, partitions=True)
    assert (ours.read_by, theirs.read_by) == ("log-reader", "delta-rs")
    # Without the partitions, a read may take the protocol, metadata and txns from the version's checksum.
    light = read_log_state(Table(table), options, app_ids=app_ids)
    for state in (ours, light):
        for name in COMPARED_FIELDS:
            assert getattr(state, name) == getattr(theirs, name), name
        assert state.schema_fields() == json.loads(theirs.schema_string)["fields"]
    assert partition_set(ours) == partition_set(theirs)
    assert len(ours.partitions or ()) == len(partition_set(ours))
    delta = DeltaTable(table, storage_options=options)
    for limit in (1, 3, None):
        assert read_commit_infos(Table(table), options, limit) == delta.history(limit), limit
    return ours
