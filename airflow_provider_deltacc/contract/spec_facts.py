"""What a typed job spec means beyond its fields, for the engine: the partitions a MERGE pins. (The
conflict-matrix kind it runs is :func:`~airflow_provider_deltacc.contract.op_kinds.spec_op_kind`.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from airflow_provider_deltacc.contract.spec import MergeOptions


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
