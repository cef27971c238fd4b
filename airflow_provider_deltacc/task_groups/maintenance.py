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
from dataclasses import dataclass
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

    from airflow_provider_deltacc.gate import WriteWindow
    from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor

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
    refuse_renamed(renamed, {"max_wait": "gate_wait_timeout"}, owner=FACTORY)
    if renamed:
        raise TypeError(f"{FACTORY}() got unexpected keyword arguments {sorted(renamed)}")
    return _MaintenanceGroup(
        table=table,
        zorder_by=zorder_by,
        only_closed_partitions=only_closed_partitions,
        partition_values=partition_values,
        full=full,
        vacuum=vacuum,
        retention_hours=retention_hours,
        force=force,
        list_only=list_only,
        write_windows=write_windows,
        deferrable=deferrable,
        poll_interval=poll_interval,
        gate_wait_timeout=gate_wait_timeout,
        lease_store_conn_id=lease_store_conn_id,
        operator_kwargs=operator_kwargs,
        group_id=group_id,
        tooltip=tooltip,
    ).build()


@dataclass(frozen=True, kw_only=True)
class _MaintenanceGroup:
    """One call of :func:`table_maintenance`: its arguments (documented there), checked at parse time, and
    the task group they build."""

    table: str
    zorder_by: Sequence[str] | None
    only_closed_partitions: bool
    partition_values: list[dict[str, Any]] | None
    full: bool
    vacuum: bool
    retention_hours: float | None
    force: bool
    list_only: bool
    write_windows: list[WriteWindow | dict[str, Any]] | None
    deferrable: bool
    poll_interval: float
    gate_wait_timeout: float | timedelta | None
    lease_store_conn_id: str | None
    operator_kwargs: Mapping[str, Any] | None
    group_id: str
    tooltip: str

    def build(self) -> TaskGroup:
        """Check the arguments, then build ``gate >> optimize >> vacuum`` in the current DAG.

        :raises DeltaCCInputError: naming the bad argument.
        """
        from airflow.sdk import TaskGroup

        from airflow_provider_deltacc.operators import DeltaOptimizeOperator, DeltaVacuumOperator

        zorder, extra = self._check()
        gated = self._gate_arguments()
        with TaskGroup(group_id=self.group_id, tooltip=self.tooltip or "gate, OPTIMIZE, VACUUM") as group:
            gate = self._gate(zorder, gated, extra)
            optimize = DeltaOptimizeOperator(
                task_id="optimize",
                table=self.table,
                zorder_by=zorder or None,
                only_closed_partitions=self.only_closed_partitions,
                partition_values=self.partition_values,
                full=self.full,
                gate_wait_timeout=self.gate_wait_timeout,
                poll_interval=self.poll_interval,
                **gated,
                **extra,
            )
            gate >> optimize
            if self.vacuum:
                vacuum_task = DeltaVacuumOperator(
                    task_id="vacuum",
                    table=self.table,
                    retention_hours=self.retention_hours,
                    force=self.force,
                    list_only=self.list_only,
                    gate_wait_timeout=self.gate_wait_timeout,
                    poll_interval=self.poll_interval,
                    **gated,
                    **extra,
                )
                optimize >> vacuum_task
        return group

    def _check(self) -> tuple[list[str], dict[str, Any]]:
        """Check every argument; return the Z-order columns and the operators' extra arguments.

        :raises DeltaCCInputError: naming the bad argument.
        """
        table_argument(FACTORY, "table", self.table)
        zorder = column_list(FACTORY, "zorder_by", self.zorder_by)
        for name in ("only_closed_partitions", "full", "vacuum", "force", "list_only", "deferrable"):
            boolean(FACTORY, name, getattr(self, name))
        partition_values = self.partition_values
        if partition_values is not None and (
            not isinstance(partition_values, list)
            or not all(isinstance(p, dict) and p for p in partition_values)
        ):
            raise fail(
                FACTORY,
                "partition_values",
                partition_values,
                'must be a list of non-empty dicts, e.g. [{"date": "2026-11-19"}]',
            )
        hours = self.retention_hours
        if hours is not None and (isinstance(hours, bool) or not isinstance(hours, int | float) or hours < 0):
            raise fail(FACTORY, "retention_hours", hours, "must be a non-negative number of hours")
        if not self.vacuum and (hours is not None or self.force or self.list_only):
            raise fail(
                FACTORY, "vacuum", self.vacuum, "retention_hours, force and list_only need vacuum=True"
            )
        poll = self.poll_interval
        if isinstance(poll, bool) or not isinstance(poll, int | float) or poll <= 0:
            raise fail(FACTORY, "poll_interval", poll, "must be a positive number of seconds")
        conn_id_argument(FACTORY, "lease_store_conn_id", self.lease_store_conn_id)
        extra = dict(self.operator_kwargs or {})
        if self.operator_kwargs is not None and not isinstance(self.operator_kwargs, Mapping):
            raise fail(
                FACTORY, "operator_kwargs", self.operator_kwargs, "must be a dict of operator arguments"
            )
        clash = sorted(_OWN_ARGUMENTS & set(extra))
        if clash:
            raise fail(FACTORY, "operator_kwargs", extra, f"sets {clash}, which the group sets itself")
        return zorder, extra

    def _gate_arguments(self) -> dict[str, Any]:
        """What the gate and both operators are told about the table's writers."""
        gated: dict[str, Any] = {"write_windows": self.write_windows, "deferrable": self.deferrable}
        if self.lease_store_conn_id is not None:  # else DAG default_args may still set it
            gated["lease_store_conn_id"] = self.lease_store_conn_id
        return gated

    def _gate(
        self, zorder: list[str], gated: dict[str, Any], extra: dict[str, Any]
    ) -> DeltaWriteWindowSensor:
        """The gate: waits until no declared window and no live lease conflicts with the OPTIMIZE.

        :param zorder: the Z-order columns (an OPTIMIZE_ZORDER is gated as such).
        :param gated: what the gate is told about the table's writers.
        :param extra: the operators' extra arguments; the sensor gets those it understands.
        """
        from airflow_provider_deltacc.sensors.write_window import DeltaWriteWindowSensor

        return DeltaWriteWindowSensor(
            task_id="gate",
            table=self.table,
            maintenance_op="optimize_zorder" if zorder else "optimize",
            partition_values=self.partition_values,
            poke_interval=self.poll_interval,  # the sensor's name for it (Airflow's)
            **gated,
            **{k: v for k, v in extra.items() if k in _SENSOR_KEYS or k in _BASE_TASK_KEYS},
        )


#: The operators' extra arguments the gate sensor understands.
_SENSOR_KEYS = frozenset(
    {
        "profile",
        "table_traits",
        "lease_store_url",
        "expected_duration",
        "storage_options",
        "aws_conn_id",
        "azure_conn_id",
        "gcp_conn_id",
    }
)

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
