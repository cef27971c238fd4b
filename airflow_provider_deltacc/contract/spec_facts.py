"""What a typed job spec means beyond its fields: the conflict-matrix kind it runs and the partitions a MERGE
pins. One place each, for the engine, the leases, the gate and the advisor."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from airflow_provider_deltacc.contract.operations import OpKind, op_kind
from airflow_provider_deltacc.contract.spec import JobSpec, MergeOptions


def spec_op_kind(spec: JobSpec) -> OpKind:
    """The conflict-checker kind the spec's operation runs (see
    :func:`~airflow_provider_deltacc.contract.operations.op_kind`)."""
    return op_kind(spec.operation, dataclasses.asdict(spec.options))


def merge_pin_columns(
    options: MergeOptions, partition_columns: Sequence[str], resolve: Callable[[str], str | None]
) -> tuple[str, ...]:
    """The partition columns a MERGE pins, in the table's spelling, by its ``partition_pin`` mode.

    ``keyed`` (the default) pins the partition columns that are also merge keys, which never changes what
    matches (a MERGE on an explicit ``condition`` has no keys, so it pins nothing); ``auto`` pins every
    partition column; a list pins those columns; None pins nothing.

    :param options: the MERGE's options.
    :param partition_columns: the target's partition columns, in the table's spelling.
    :param resolve: the table's spelling of a column named in a pin list, or None when it is not a partition
        column (the caller decides whether that is an error).
    """
    pin = options.partition_pin
    if pin is None or not partition_columns:
        return ()
    if pin == "keyed":
        keys = {key.lower() for key in options.keys}
        return tuple(column for column in partition_columns if column.lower() in keys)
    if pin == "auto":
        return tuple(partition_columns)
    resolved: list[str] = []
    for column in pin:
        actual = resolve(column)
        if actual is not None and actual not in resolved:
            resolved.append(actual)
    return tuple(resolved)
