"""Writer leases: what a writer's job spec means as a lease, and holding it without ever failing the write.

A writer opens a lease on its table before it submits and closes it afterwards (also on failure), so the
maintenance gate sees it. It waits (bounded) only for a maintenance lease that would conflict with it, then
goes ahead with a warning: maintenance never blocks a writer indefinitely. A lease store that cannot be
reached never fails the write either: the writer logs a warning and runs without a lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.ddl import ddl_column_names
from airflow_provider_deltacc.contract.exceptions import ExclusiveLeaseUnavailable
from airflow_provider_deltacc.contract.op_kinds import OpKind, spec_op_kind
from airflow_provider_deltacc.contract.operations import OPERATIONS
from airflow_provider_deltacc.contract.spec import JobSpec, MergeOptions
from airflow_provider_deltacc.contract.spec_facts import merge_pin_columns
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.table_facts import (
    TableFacts,
    canonical_partition_value,
    read_table_facts,
)
from airflow_provider_deltacc.leases.conflicts import any_lease, maintenance_lease_conflicts
from airflow_provider_deltacc.leases.heartbeat import HeldLease, hold_lease
from airflow_provider_deltacc.leases.lease import Lease, LeaseRequest
from airflow_provider_deltacc.leases.partitions import PartitionScope, PartitionSpec, format_scope
from airflow_provider_deltacc.leases.store import LeaseStore

log = logging.getLogger(__name__)

#: The most partitions a lease lists before it is widened to the whole table.
MAX_LEASE_PARTITIONS = 1000


def writer_op_kind(job: JobSpec) -> OpKind:
    """The conflict-matrix operation a writer's job spec runs (see
    :func:`~airflow_provider_deltacc.contract.op_kinds.spec_op_kind`).

    :param job: the job spec.
    :raises ValueError: for an operation that is not a write (``optimize``, ``vacuum``).
    """
    if OPERATIONS[job.operation].is_maintenance:
        writes = ", ".join(op.name for op in OPERATIONS.values() if op.is_write)
        raise ValueError(f"operation={job.operation!r} is not a write; writer leases are for {writes}")
    return spec_op_kind(job)


def _facts(table: Table, loader: Callable[[Table], TableFacts | None]) -> TableFacts | None:
    try:
        return loader(table)
    except Exception as exc:  # no table yet, unreachable storage: the scope is the whole table
        log.debug("could not read %s with delta-rs (%s); leasing the whole table", table, exc)
        return None


def canonical_scope(values: Sequence[Mapping[str, Any]], facts: TableFacts | None) -> PartitionScope:
    """Partition specs with Delta's string values and the table's column spelling; None if unpredictable."""
    specs: list[PartitionSpec] = []
    for entry in values:
        if not isinstance(entry, Mapping) or not entry:
            return None
        spec: PartitionSpec = {}
        for column, value in entry.items():
            text = canonical_partition_value(value)
            if text is None:
                return None
            name = facts.column(str(column)) if facts is not None else str(column)
            if name is None:
                return None
            spec[name] = text
        if spec not in specs:
            specs.append(spec)
    if not specs or len(specs) > MAX_LEASE_PARTITIONS:
        return None
    return specs


def _merge_source_partitions(spec: JobSpec, facts: TableFacts) -> PartitionScope:
    """The pinned partitions of a MERGE whose source rows are inline (the only cheaply known case)."""
    source, options = spec.source, spec.options
    if source is None or source.kind != "rows" or not source.rows or not isinstance(options, MergeOptions):
        return None
    if not facts.partitioned:
        return None
    pinned = merge_pin_columns(options, facts.partition_columns, resolve=facts.column)
    if not pinned:
        return None
    names = ddl_column_names(str(source.schema or ""))
    positions = {name.lower(): index for index, name in enumerate(names)}
    values: list[dict[str, Any]] = []
    for row in source.rows:
        entry: dict[str, Any] = {}
        for column in pinned:
            if isinstance(row, Mapping):
                matches = [key for key in row if str(key).lower() == column.lower()]
                if not matches:
                    return None
                entry[column] = row[matches[0]]
            else:
                index = positions.get(column.lower())
                if index is None or not isinstance(row, list | tuple) or index >= len(row):
                    return None
                entry[column] = row[index]
        values.append(entry)
    return canonical_scope(values, facts)


def writer_partitions(
    job: JobSpec,
    *,
    facts_loader: Callable[[Table], TableFacts | None] = read_table_facts,
) -> PartitionScope:
    """The partitions a writer's lease names, or None for the whole table.

    Pinned partitions are known from ``options.partition_values`` (overwrite, UPDATE, DELETE, or any
    operation that passes them), and for a MERGE from its inline source rows when the table's partition
    columns can be read with delta-rs and the merge pins them. Anything else, or any value whose string in
    Delta's log cannot be predicted, leases the whole table.

    :param job: the job spec.
    :param facts_loader: reads the table's partition columns (delta-rs by default; tests substitute it).
    """
    explicit = getattr(job.options, "partition_values", None)
    if explicit:
        facts = _facts(job.table, facts_loader) if job.table.is_path else None
        return canonical_scope(explicit, facts)
    if job.operation == "merge" and job.table.is_path:
        facts = _facts(job.table, facts_loader)
        if facts is not None:
            return _merge_source_partitions(job, facts)
    return None


def _never(_lease: Lease) -> bool:
    return False


@contextmanager
def writer_lease(
    open_store: Callable[[], LeaseStore],
    request: LeaseRequest,
    *,
    wait_timeout_s: float,
    poll_s: float = 1.0,
    heartbeat_s: float | None = None,
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
    logger: Any = None,
) -> Iterator[HeldLease | None]:
    """Hold a writer's lease around its job; never fails the job because of maintenance or the store.

    1. Wait at most ``wait_timeout_s`` for every active maintenance lease that conflicts with the writer
       (:func:`maintenance_lease_conflicts`).
    2. If the wait runs out, take the lease anyway (so the gate sees the writer) and warn.
    3. Heartbeat while the block runs; release afterwards, also when the block raises.

    If the store cannot be opened or reached, a warning is logged and the block runs without a lease
    (yielding None).

    :param open_store: opens the lease store (called once).
    :param request: the writer's lease.
    :param wait_timeout_s: the longest wait for a conflicting maintenance lease.
    :param poll_s: the pause between acquisition attempts while waiting.
    :param heartbeat_s: the renewal interval; None for a third of the TTL.
    :param profile: the engine profile, for the conflict matrix.
    :param traits: the table's traits, for the conflict matrix.
    :param logger: where warnings go (the task's logger, any object with ``warning``); this module's
        logger by default.
    """
    out = logger if logger is not None else log
    with ExitStack() as stack:
        held: HeldLease | None = None
        try:
            store = stack.enter_context(open_store())
            conflicts = maintenance_lease_conflicts(
                request.op_kind, request.partitions, profile=profile, traits=traits
            )
            held = stack.enter_context(
                hold_lease(
                    store,
                    request,
                    conflicts=conflicts,
                    wait_timeout_s=wait_timeout_s,
                    poll_s=poll_s,
                    heartbeat_s=heartbeat_s,
                )
            )
            if not held.acquired:
                blockers = "; ".join(lease.describe() for lease in held.blocking) or "nothing"
                out.warning(
                    "writing to %s anyway after waiting %.0f s (maintenance_wait_timeout) for %s; the "
                    "write may conflict with that maintenance and be retried",
                    request.table,
                    held.waited_s,
                    blockers,
                )
                held = stack.enter_context(
                    hold_lease(store, request, conflicts=_never, wait_timeout_s=0, heartbeat_s=heartbeat_s)
                )
        except Exception as exc:
            out.warning(
                "write lease store unavailable (%s: %s); writing %s on %s (%s) without a lease, so "
                "maintenance cannot see this writer",
                type(exc).__name__,
                exc,
                request.op_kind.name,
                request.table,
                format_scope(request.partitions),
            )
            held = None
        yield held


@contextmanager
def exclusive_writer_lease(
    open_store: Callable[[], LeaseStore],
    request: LeaseRequest,
    *,
    wait_timeout_s: float,
    poll_s: float = 1.0,
    heartbeat_s: float | None = None,
) -> Iterator[HeldLease]:
    """Hold a writer's lease that no other lease on the table may overlap, or raise.

    For tables whose storage cannot exclude concurrent writers (S3 without a multi-writer log store): the
    writer waits at most ``wait_timeout_s`` until no other live lease (writer or maintenance) is on the
    table, and other writers and maintenance wait for it in turn (they take exclusive leases too). Unlike
    :func:`writer_lease` it never writes without the lease: an unreachable store or a wait that runs out
    raises :class:`ExclusiveLeaseUnavailable`.

    :param open_store: opens the lease store (called once).
    :param request: the writer's lease.
    :param wait_timeout_s: the longest wait for the table to be free.
    :param poll_s: the pause between acquisition attempts while waiting.
    :param heartbeat_s: the renewal interval; None for a third of the TTL.
    :raises ExclusiveLeaseUnavailable: the lease could not be taken.
    """
    with ExitStack() as stack:
        try:
            store = stack.enter_context(open_store())
            held = stack.enter_context(
                hold_lease(
                    store,
                    request,
                    conflicts=any_lease,
                    wait_timeout_s=wait_timeout_s,
                    poll_s=poll_s,
                    heartbeat_s=heartbeat_s,
                )
            )
        except Exception as exc:
            raise ExclusiveLeaseUnavailable(
                f"the lease store is unavailable ({type(exc).__name__}: {exc}), so this writer cannot make "
                "sure it is alone on the table"
            ) from exc
        if not held.acquired:
            blockers = "; ".join(lease.describe() for lease in held.blocking) or "nothing"
            raise ExclusiveLeaseUnavailable(
                f"other work kept the table for {held.waited_s:.0f} s: {blockers}", held.blocking
            )
        yield held
