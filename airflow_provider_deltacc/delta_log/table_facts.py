"""What the gate and the lease code read from a Delta table without Spark: reads of its log by the
provider's log reader (:mod:`airflow_provider_deltacc.delta_log.log_reader`; delta-rs where it cannot).

Only tables addressed by a storage location (a path or URI) can be read this way; for a catalog name every
reader here answers None and the callers fall back to cautious defaults (whole-table scopes, Delta's
default retention, no traits). Nothing is read at module import.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from airflow_provider_deltacc.conflict_matrix import TableTraits
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.leases.partitions import PartitionSpec

log = logging.getLogger(__name__)

RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
#: The writer feature every liquid-clustered table's protocol lists.
CLUSTERING_FEATURE = "clustering"


@dataclass(frozen=True)
class TableFacts:
    """A Delta table's layout and settings, as read from its log.

    :param partition_columns: the partition columns in table order.
    :param configuration: the table properties.
    :param clustered: the table is liquid-clustered (its protocol has the ``clustering`` writer feature).
    :param clustering_columns: its clustering columns, when the retained history names them (empty when
        not clustered, or when the log that set them was cleaned up; ``clustered`` still says so).
    """

    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str]
    clustered: bool = False
    clustering_columns: tuple[str, ...] = ()

    @property
    def partitioned(self) -> bool:
        """Whether the table has partition columns."""
        return bool(self.partition_columns)

    @property
    def deletion_vectors(self) -> bool:
        """Whether ``delta.enableDeletionVectors`` is true."""
        return str(self.configuration.get(DELETION_VECTORS_PROPERTY, "")).lower() == "true"

    def traits(self) -> TableTraits:
        """The conflict-matrix traits the log shows (``partitioned``, ``deletion_vectors``, ``clustered``)."""
        return TableTraits(
            partitioned=self.partitioned, deletion_vectors=self.deletion_vectors, clustered=self.clustered
        )

    def retention_hours(self) -> float | None:
        """``delta.deletedFileRetentionDuration`` in hours, or None when the property is not set.

        :raises ValueError: when the property is set but cannot be read.
        """
        from airflow_provider_deltacc.contract.retention import parse_interval_hours

        text = self.configuration.get(RETENTION_PROPERTY)
        return None if text is None else parse_interval_hours(text)

    def column(self, name: str) -> str | None:
        """The table's spelling of partition column ``name`` (Delta compares names case-insensitively)."""
        for column in self.partition_columns:
            if column.lower() == name.lower():
                return column
        return None


def read_table_facts(table: Table, storage_options: Mapping[str, str] | None = None) -> TableFacts | None:
    """Read the table's partition columns and properties from its log; None for a catalog name.

    :param table: the table.
    :param storage_options: delta-rs storage options (object-store credentials).
    :raises Exception: when there is no table there or its storage cannot be read; callers decide.
    """
    if not table.is_path:
        return None
    from airflow_provider_deltacc.delta_log.log_reader import commit_infos, log_state

    state = log_state(table, storage_options)
    clustered = CLUSTERING_FEATURE in state.writer_features
    columns = latest_clustering_columns(commit_infos(table, storage_options)) if clustered else ()
    return TableFacts(state.partition_columns, dict(state.configuration), clustered, columns)


def latest_clustering_columns(history: list[dict[str, Any]]) -> tuple[str, ...]:
    """The clustering columns the newest commit that set them names, from the commits' ``commitInfo``.

    The log reader (like delta-rs) does not read the ``delta.clustering`` domain metadata, but the commits
    that change it say what they set: ``CREATE TABLE``/``REPLACE TABLE`` (``clusterBy``, a JSON list) and
    ``CLUSTER BY`` (``newClusteringColumns``, comma-separated). Empty when the retained history has neither.

    :param history: commit infos, newest first (as ``DeltaTable.history()`` gives them).
    """
    for commit in history:
        parameters = commit.get("operationParameters") or {}
        if commit.get("operation") == "CLUSTER BY" and "newClusteringColumns" in parameters:
            text = str(parameters["newClusteringColumns"])
            return tuple(c.strip() for c in text.split(",") if c.strip())
        if "clusterBy" in parameters:
            try:
                columns = json.loads(str(parameters["clusterBy"]))
            except ValueError:
                return ()
            return tuple(str(c) for c in columns) if isinstance(columns, list) else ()
    return ()


def table_partitions(table: Table, storage_options: Mapping[str, str] | None = None) -> list[PartitionSpec]:
    """The table's partitions that hold data, as ``[{column: value}]``; partitions with a null value are left
    out (a null cannot be named by a partition spec). Empty for an unpartitioned table.

    :param table: the table (a path or URI).
    :param storage_options: delta-rs storage options.
    """
    from airflow_provider_deltacc.delta_log.log_reader import log_state

    found = log_state(table, storage_options, partitions=True).partitions or ()
    specs: list[PartitionSpec] = []
    for partition in found:
        if not partition or any(value is None for value in partition.values()):
            continue
        spec = {str(column): str(value) for column, value in partition.items()}
        if spec not in specs:
            specs.append(spec)
    return sorted(specs, key=lambda spec: sorted(spec.items()))


def canonical_partition_value(value: Any) -> str | None:
    """The string Delta's log uses for a partition value, or None if it cannot be predicted safely.

    Strings, integers, booleans (``true``/``false``), dates (ISO) and finite floats are predictable;
    anything else (timestamps, decimals, nulls) returns None and the caller treats the scope as the whole
    table, the cautious choice.

    :param value: a partition value from an operator argument or an inline source row.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, date) and type(value) is date:
        return value.isoformat()
    return None
