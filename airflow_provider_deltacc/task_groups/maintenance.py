"""``table_maintenance``: gate -> OPTIMIZE (closed partitions, optional Z-order) -> VACUUM (guarded).

``gate``
    :class:`~airflow_provider_deltacc.sensors.write_window.DeltaWriteWindowSensor`: waits (in ``reschedule``
    mode, or deferred with ``deferrable=True``) until no declared write window and no live write lease
    conflicts with the OPTIMIZE.
``optimize``
    :class:`~airflow_provider_deltacc.operators.maintenance.DeltaOptimizeOperator` with
    ``only_closed_partitions=True``: compacts only the partitions no writer is active on, and holds an
    OPTIMIZE lease while it runs (the gate is asked again: a writer may have started since the sensor).
    On a liquid-clustered table (no partitions) it clusters incrementally once the whole table is quiet;
    ``full=True`` reclusters every file (``OPTIMIZE … FULL``).
``vacuum``
    :class:`~airflow_provider_deltacc.operators.maintenance.DeltaVacuumOperator`: refuses a retention below
    the table's ``delta.deletedFileRetentionDuration`` (unless ``force``), waits until no writer at all is
    active, and holds a VACUUM lease.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import refuse_renamed
from airflow_provider_deltacc.deployment.config import default_deferrable
from airflow_provider_deltacc.task_groups._checks import (
    boolean,
    column_list,
    conn_id_argument,
    fail,
    table_argument,
)

if TYPE_CHECKING:
    from airflow.sdk import TaskGroup

    from airflow_provider_deltacc.windows import WriteWindow

FACTORY = "table_maintenance"
_OWN_ARGUMENTS = frozenset(
    {
        "task_id",
        "table",
        "maintenance_op",
        "partition_values",
        "zorder_by",
        "only_closed_partitions",
        "full",
        "retention_hours",
        "force",
        "list_only",
        "poll_interval",
        "poke_interval",
        "write_windows",
        "lease_store_conn_id",
        "task_group",
    }
)


def table_maintenance(
    *,
    table: str,
    zorder_by: Sequence[str] | None = None,
    only_closed_partitions: bool = True,
    partition_values: list[dict[str, Any]] | None = None,
    full: bool = False,
    vacuum: bool = True,
    retention_hours: float | None = None,
    force: bool = False,
    list_only: bool = False,
    write_windows: list[WriteWindow | dict[str, Any]] | None = None,
    deferrable: bool = default_deferrable(),
    poll_interval: float = 30.0,
    gate_wait_timeout: float | timedelta | None = None,
    lease_store_conn_id: str | None = None,
    operator_kwargs: Mapping[str, Any] | None = None,
    group_id: str = "table_maintenance",
    tooltip: str = "",
    **renamed: Any,
) -> TaskGroup:
    """Build the maintenance task group in the current DAG: ``gate >> optimize >> vacuum``.

    :param table: the Delta table (path or catalog name), as its writers' leases spell it.
    :param zorder_by: Z-order the compacted files by these columns (an ``OPTIMIZE_ZORDER``, which the gate
        treats as such).
    :param only_closed_partitions: compact only partitions no conflicting writer or window touches (the
        default); False waits until the whole table (or all of ``partition_values``) is quiet.
    :param partition_values: restrict OPTIMIZE to these partitions, e.g. ``[{"date": "2026-11-19"}]``.
    :param full: for a liquid-clustered table: ``OPTIMIZE … FULL`` reclusters every file (after the
        clustering columns changed); not with ``zorder_by`` or ``partition_values``.
    :param vacuum: add the VACUUM step (True by default).
    :param retention_hours: VACUUM retention; None uses the table's ``delta.deletedFileRetentionDuration``.
        A value below it is refused unless ``force``.
    :param force: allow a retention below the table's (VACUUM still waits for every writer).
    :param list_only: VACUUM only lists what it would delete (a dry run; the operator's name, since
        ``dry_run`` is a BaseOperator method).
    :param write_windows: declared write windows (``WriteWindow`` objects or dicts) of the table's writers.
    :param deferrable: wait in the triggerer rather than in a worker slot; the default is
        ``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False).
    :param poll_interval: the longest pause between two gate decisions, in seconds: the operators'
        ``poll_interval`` and the gate sensor's ``poke_interval``.
    :param gate_wait_timeout: OPTIMIZE/VACUUM give up after waiting for the gate this long (seconds or a
        timedelta); None waits.
    :param lease_store_conn_id: the lease store's ``postgres`` or ``sqlite`` connection, for all three tasks;
        None reads ``[deltacc] lease_store_conn_id`` (then the older ``lease_store_url``, which
        ``operator_kwargs`` may carry).
    :param operator_kwargs: extra arguments for the three tasks (``execution_mode``, ``lease_store_url``,
        ``profile``, ``table_traits``, ``storage_options``, ``retries``, ...); the sensor gets those it
        understands.
    :param group_id: the task group's id.
    :param tooltip: the task group's tooltip.
    :returns: the task group.
    :raises DeltaCCInputError: at parse time, naming the bad argument.
    :raises TypeError: an unknown argument, or ``max_wait`` (``gate_wait_timeout``'s name before the rename).
    """
    from airflow.sdk import TaskGroup

    from airflow_provider_deltacc.operators import DeltaOptimizeOperator, DeltaVacuumOperator
    from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor

    refuse_renamed(renamed, {"max_wait": "gate_wait_timeout"}, owner=FACTORY)
    if renamed:
        raise TypeError(f"{FACTORY}() got unexpected keyword arguments {sorted(renamed)}")
    table_argument(FACTORY, "table", table)
    zorder = column_list(FACTORY, "zorder_by", zorder_by)
    for name, value in (
        ("only_closed_partitions", only_closed_partitions),
        ("full", full),
        ("vacuum", vacuum),
        ("force", force),
        ("list_only", list_only),
        ("deferrable", deferrable),
    ):
        boolean(FACTORY, name, value)
    if partition_values is not None and (
        not isinstance(partition_values, list) or not all(isinstance(p, dict) and p for p in partition_values)
    ):
        raise fail(
            FACTORY,
            "partition_values",
            partition_values,
            'must be a list of non-empty dicts, e.g. [{"date": "2026-11-19"}]',
        )
    if retention_hours is not None and (
        isinstance(retention_hours, bool)
        or not isinstance(retention_hours, int | float)
        or retention_hours < 0
    ):
        raise fail(FACTORY, "retention_hours", retention_hours, "must be a non-negative number of hours")
    if not vacuum and (retention_hours is not None or force or list_only):
        raise fail(FACTORY, "vacuum", vacuum, "retention_hours, force and list_only need vacuum=True")
    if isinstance(poll_interval, bool) or not isinstance(poll_interval, int | float) or poll_interval <= 0:
        raise fail(FACTORY, "poll_interval", poll_interval, "must be a positive number of seconds")
    conn_id_argument(FACTORY, "lease_store_conn_id", lease_store_conn_id)
    extra = dict(operator_kwargs or {})
    if operator_kwargs is not None and not isinstance(operator_kwargs, Mapping):
        raise fail(FACTORY, "operator_kwargs", operator_kwargs, "must be a dict of operator arguments")
    clash = sorted(_OWN_ARGUMENTS & set(extra))
    if clash:
        raise fail(FACTORY, "operator_kwargs", extra, f"sets {clash}, which the group sets itself")

    gated: dict[str, Any] = {"write_windows": write_windows, "deferrable": deferrable}
    if lease_store_conn_id is not None:  # else DAG default_args may still set it
        gated["lease_store_conn_id"] = lease_store_conn_id
    sensor_keys = {
        "profile",
        "table_traits",
        "lease_store_url",
        "expected_duration",
        "storage_options",
        "aws_conn_id",
        "azure_conn_id",
        "gcp_conn_id",
    }
    sensor_extra = {k: v for k, v in extra.items() if k in sensor_keys or k in _BASE_TASK_KEYS}
    with TaskGroup(group_id=group_id, tooltip=tooltip or "gate, OPTIMIZE, VACUUM") as group:
        gate = DeltaWriteWindowSensor(
            task_id="gate",
            table=table,
            maintenance_op="optimize_zorder" if zorder else "optimize",
            partition_values=partition_values,
            poke_interval=poll_interval,  # the sensor's name for it (Airflow's)
            **gated,
            **sensor_extra,
        )
        optimize = DeltaOptimizeOperator(
            task_id="optimize",
            table=table,
            zorder_by=zorder or None,
            only_closed_partitions=only_closed_partitions,
            partition_values=partition_values,
            full=full,
            gate_wait_timeout=gate_wait_timeout,
            poll_interval=poll_interval,
            **gated,
            **extra,
        )
        gate >> optimize
        if vacuum:
            vacuum_task = DeltaVacuumOperator(
                task_id="vacuum",
                table=table,
                retention_hours=retention_hours,
                force=force,
                list_only=list_only,
                gate_wait_timeout=gate_wait_timeout,
                poll_interval=poll_interval,
                **gated,
                **extra,
            )
            optimize >> vacuum_task
    return group


#: BaseOperator arguments that also make sense for the sensor.
_BASE_TASK_KEYS = frozenset(
    {
        "retries",
        "retry_delay",
        "owner",
        "pool",
        "queue",
        "priority_weight",
        "execution_timeout",
        "doc_md",
        "on_failure_callback",
        "on_success_callback",
    }
)
