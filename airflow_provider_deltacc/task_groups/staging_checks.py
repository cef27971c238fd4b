"""The parse-time checks of ``staging_append_then_merge``'s arguments: pure Python, no Spark; every error
names the argument."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from airflow_provider_deltacc.contract.spec import PARTITION_AND_CLUSTER
from airflow_provider_deltacc.contract.table import CATALOG_NAME_RE, Table
from airflow_provider_deltacc.contract.table_location import same_table
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators import parse_time
from airflow_provider_deltacc.task_groups._checks import (
    boolean,
    column_list,
    conn_id_argument,
    ddl_columns,
    fail,
    is_templated,
    require_columns,
    table_argument,
)
from airflow_provider_deltacc.task_groups.staging_batches import tag_source

if TYPE_CHECKING:
    from airflow_provider_deltacc.task_groups.staging import StagingGroup

FACTORY = "staging_append_then_merge"
#: Arguments the factory sets itself; ``operator_kwargs`` must not repeat them.
_OWN_ARGUMENTS = frozenset(
    {
        "task_id",
        "table",
        "source",
        "keys",
        "condition",
        "partition_by",
        "cluster_by",
        "partition_values",
        "create_if_missing",
        "merge_schema",
        "txn_app_id",
        "txn_version",
        "when_matched",
        "when_not_matched",
        "dedup_order_by",
        "dedup_keys",
        "partition_pin",
        "commit_retry",
        "lease_store_conn_id",
        "task_group",
    }
)


class CheckedColumns(NamedTuple):
    """The column arguments, checked and normalised to lists.

    :param keys: the MERGE keys.
    :param partition_by: the target's partition columns.
    :param cluster_by: the target's clustering columns.
    """

    keys: list[str]
    partition_by: list[str]
    cluster_by: list[str]


def check_arguments(group: StagingGroup) -> CheckedColumns:
    """Validate everything that can be validated without Spark; return the normalised column lists.

    :param group: the group's arguments.
    :raises DeltaCCInputError: naming the bad argument.
    """
    staging = table_argument(FACTORY, "staging_table", group.staging_table)
    target = table_argument(FACTORY, "target_table", group.target_table)
    if same_table(Table(staging), Table(target)):  # any two spellings of one table
        raise fail(FACTORY, "staging_table", staging, "must not be the target_table")
    columns = ddl_columns(FACTORY, "schema", group.schema)
    batch_column = group.batch_column
    if not isinstance(batch_column, str) or not batch_column.strip():
        raise fail(FACTORY, "batch_column", batch_column, "give a column name")
    if batch_column.lower() in {c.lower() for c in columns}:
        raise fail(
            FACTORY, "batch_column", batch_column, "is already a column of schema; pick another batch_column"
        )
    keys = column_list(FACTORY, "keys", group.keys, required=True)
    require_columns(FACTORY, "keys", group.keys, keys, columns, "schema")
    partitions = column_list(FACTORY, "partition_by", group.partition_by)
    require_columns(FACTORY, "partition_by", group.partition_by, partitions, columns, "schema")
    clustering = column_list(FACTORY, "cluster_by", group.cluster_by)
    require_columns(FACTORY, "cluster_by", group.cluster_by, clustering, columns, "schema")
    pin = group.partition_pin
    if clustering:
        _check_clustered_target(group.partition_by, clustering, pin, group.target_table)
    if pin == "keyed":
        unpinned = [c for c in partitions if c.lower() not in {k.lower() for k in keys}]
        if unpinned:
            raise fail(
                FACTORY,
                "partition_by",
                group.partition_by,
                f"{unpinned} are not merge keys, so partition_pin='keyed' cannot pin the MERGE to the "
                "partitions it touches; add them to keys, or pass partition_pin='auto' (only if a key "
                "never moves between partitions) or None",
            )
    elif pin not in ("auto", None):
        pin_columns = column_list(FACTORY, "partition_pin", pin, required=True)
        known = partitions or columns
        require_columns(FACTORY, "partition_pin", pin, pin_columns, known, "partition_by")
    order = group.dedup_order_by
    if order is not None:
        if not isinstance(order, str) or not order.strip():
            raise fail(FACTORY, "dedup_order_by", order, "give one column name, or None")
        require_columns(FACTORY, "dedup_order_by", order, [order], columns, "schema")
    boolean(FACTORY, "latest_wins", group.latest_wins)
    boolean(FACTORY, "schema_evolution", group.schema_evolution)
    boolean(FACTORY, "create_tables", group.create_tables)
    conn_id_argument(FACTORY, "lease_store_conn_id", group.lease_store_conn_id)
    extra = group.operator_kwargs
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise fail(FACTORY, "operator_kwargs", extra, "must be a dict of operator arguments")
        clash = sorted(_OWN_ARGUMENTS & set(extra))
        if clash:
            raise fail(
                FACTORY,
                "operator_kwargs",
                dict(extra),
                f"sets {clash}, which the group sets itself; use the factory's own arguments",
            )
    _check_sources(group.sources)
    if not is_templated(staging) and not Table(staging).is_path and not CATALOG_NAME_RE.fullmatch(staging):
        raise fail(FACTORY, "staging_table", staging, "is neither a path (with '/') nor a catalog name")
    return CheckedColumns(keys, partitions, clustering)


def _check_clustered_target(partition_by: Any, clustering: list[str], pin: Any, target: str) -> None:
    """A clustered target: no partition columns, and no pin (there are no partitions to pin)."""
    if partition_by:
        raise fail(
            FACTORY,
            "cluster_by",
            clustering,
            f"partition_by={list(partition_by)!r} is given too: {PARTITION_AND_CLUSTER}",
        )
    if pin not in ("keyed", "auto", None):
        raise fail(
            FACTORY,
            "partition_pin",
            pin,
            f"the target is liquid-clustered by {clustering} and has no partitions to pin; drop "
            "partition_pin",
        )
    if pin == "auto":
        parse_time.check_clustered_pin(f"{FACTORY}.merge_batches", target, clustering, pin)


def _check_sources(sources: Any) -> None:
    from airflow.sdk import XComArg

    if isinstance(sources, XComArg):
        return  # resolved at run time; plan_batches checks every one then
    if isinstance(sources, str | bytes | Mapping) or not isinstance(sources, Sequence):
        raise fail(
            FACTORY,
            "sources",
            sources,
            "must be a list of sources (one per concurrent append) or an upstream task's output",
        )
    for index, source in enumerate(sources):
        if is_templated(source):
            continue
        try:
            tag_source(source, "parse-check", field=f"sources[{index}]")
        except DeltaCCInputError as exc:
            raise fail(FACTORY, "sources", list(sources), str(exc)) from None
