"""Maintenance operators: OPTIMIZE (compaction, optional Z-order) and VACUUM (with a retention guard).

Both wait for the maintenance gate and hold a maintenance lease while they run; see
:class:`~airflow_provider_deltacc.operators.maintenance_base.DeltaMaintenanceOperator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.spec import OptimizeOptions, VacuumOptions
from airflow_provider_deltacc.contract.spec_options import optimize_options, vacuum_options
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators import parse_time
from airflow_provider_deltacc.operators.maintenance_base import DeltaMaintenanceOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.contract.spec import JobSpec
    from airflow_provider_deltacc.delta_log.table_facts import TableFacts
    from airflow_provider_deltacc.gate import GateDecision
    from airflow_provider_deltacc.leases.partitions import PartitionScope


class DeltaOptimizeOperator(DeltaMaintenanceOperator):
    """Compact small files, optionally only in some partitions and with Z-ordering; waits for the gate.

    Compaction commits with ``dataChange=false``: it never fails a concurrent blind append, but it does
    fail DML that read the files it rewrites, and two OPTIMIZEs over the same files collide. So it waits for
    write leases and declared windows of DML on its partitions (not for appends), and holds an OPTIMIZE
    lease while it runs.

    :param partition_values: only these partitions, e.g. ``[{"date": "2026-11-19"}]``. (templated)
    :param zorder_by: Z-order by these columns.
    :param only_closed_partitions: compact only the partitions no conflicting lease or window touches (of
        ``partition_values``, or else of every partition the table has, read with delta-rs); wait while
        none is closed (the default, as in ``table_maintenance``). False waits until all of them (or the
        whole table) are free.
    :param full: on a liquid-clustered table, ``OPTIMIZE … FULL``: recluster every file, not only those
        incremental clustering picks (after ``ALTER TABLE … CLUSTER BY`` changed the columns). Clustered
        tables only; not with ``zorder_by`` or ``partition_values``. A plain OPTIMIZE of a clustered table
        already clusters incrementally.

    See :class:`~airflow_provider_deltacc.operators.maintenance_base.DeltaMaintenanceOperator` for the gate
    arguments.
    """

    operation = "optimize"
    template_fields: Sequence[str] = (*DeltaMaintenanceOperator.template_fields, "partition_values")
    advisor_arguments = (*DeltaMaintenanceOperator.advisor_arguments, "zorder_by")

    def __init__(
        self,
        *,
        partition_values: list[dict[str, Any]] | None = None,
        zorder_by: list[str] | None = None,
        only_closed_partitions: bool = True,
        full: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.partition_values = partition_values
        self.zorder_by = zorder_by
        self.only_closed_partitions = only_closed_partitions
        self.full = full
        if full and (zorder_by or partition_values):
            raise DeltaCCInputError(
                f"{self.task_id}: full=True reclusters a whole liquid-clustered table, which takes neither "
                f"zorder_by={zorder_by!r} nor partition_values={partition_values!r}; drop them (or full)",
                field="full",
                value=True,
            )

    def build_options(self, context: Context) -> OptimizeOptions:
        return optimize_options(
            partition_values=self.partition_values or None,
            zorder_by=self.zorder_by or None,
            full=True if self.full else None,
        )

    def kind_options(self) -> dict[str, Any]:
        return {"zorder_by": self.zorder_by}

    def _candidates(self, facts: TableFacts | None) -> PartitionScope:
        from airflow_provider_deltacc.delta_log.table_facts import table_partitions
        from airflow_provider_deltacc.turns.writer import canonical_scope

        if self.partition_values:
            scope = canonical_scope(self.partition_values, facts)
            if scope is None:
                raise DeltaCCInputError(
                    f"{self.task_id}: partition_values={self.partition_values!r} cannot be compared with "
                    "write leases; give string, integer, boolean or date values of partition columns",
                    field="partition_values",
                    value=self.partition_values,
                )
            return scope
        if not self.only_closed_partitions or facts is None or not facts.partitioned:
            if self.only_closed_partitions:
                self.log.info(
                    "only_closed_partitions: %s is not a partitioned table delta-rs can read; "
                    "OPTIMIZE waits for the whole table",
                    self.table,
                )
            return None
        try:
            found = table_partitions(Table(self.table), self.delta_rs_options)
        except Exception as exc:
            self.log.warning(
                "cannot list the partitions of %s (%s); waiting for the whole table", self.table, exc
            )
            return None
        return found or None

    def gate_fields(self, spec: JobSpec, facts: TableFacts | None) -> dict[str, Any]:
        return {
            "partitions": self._candidates(facts),
            "require_all_partitions": not self.only_closed_partitions,
        }

    def apply_decision(self, spec: JobSpec, decision: GateDecision) -> tuple[JobSpec, PartitionScope]:
        closed = decision.closed_partitions
        if closed is None:
            return spec, None
        from airflow_provider_deltacc.contract.spec import OptimizeOptions

        assert isinstance(spec.options, OptimizeOptions)
        options = replace(spec.options, partition_values=tuple(dict(p) for p in closed))
        return replace(spec, options=options), closed


class DeltaVacuumOperator(DeltaMaintenanceOperator):
    """Delete files no longer referenced by the table; waits until no writer is active on the table.

    Before any wait it refuses (fails, without retries) a ``retention_hours`` shorter than the table's
    ``delta.deletedFileRetentionDuration`` (read from the log with delta-rs for a path; Delta's default of
    168 h otherwise) or than the age of the oldest active lease, unless ``force=True``.

    :param retention_hours: keep files newer than this; never below ``delta.deletedFileRetentionDuration``
        unless ``force=True``. Delta >= 4.1 ignores a non-zero RETAIN by default; the job detects that,
        honours the request and reports it. (templated)
    :param force: allow an unsafe retention (it still waits for every writer).
    :param list_only: a dry run: only list what would be deleted. It is the job spec's ``dry_run`` option
        (delta-rs' and Delta's name), but an operator cannot take ``dry_run``: Airflow's ``BaseOperator``
        has a ``dry_run()`` method (it renders the templates), which an attribute of that name would shadow.

    See :class:`~airflow_provider_deltacc.operators.maintenance_base.DeltaMaintenanceOperator` for the gate
    arguments.
    """

    operation = "vacuum"
    template_fields: Sequence[str] = (*DeltaMaintenanceOperator.template_fields, "retention_hours")
    advisor_arguments = (*DeltaMaintenanceOperator.advisor_arguments, "force")

    def __init__(
        self,
        *,
        retention_hours: float | str | None = None,
        force: bool = False,
        list_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.retention_hours = retention_hours
        self.force = force
        self.list_only = list_only
        parse_time.check_vacuum(self.task_id, self.table, retention_hours, force)

    def build_options(self, context: Context) -> VacuumOptions:
        retention = None if self.retention_hours in (None, "") else _as_number(self.retention_hours)
        return vacuum_options(retention_hours=retention, force=self.force, dry_run=self.list_only)

    def gate_fields(self, spec: JobSpec, facts: TableFacts | None) -> dict[str, Any]:
        from airflow_provider_deltacc.gate import DELTA_DEFAULT_RETENTION_HOURS

        table_hours: float | None = None
        if facts is not None:
            try:
                # The log was read: an unset property is Delta's default, not an unknown.
                table_hours = facts.retention_hours()
                if table_hours is None:
                    table_hours = DELTA_DEFAULT_RETENTION_HOURS
            except ValueError as exc:
                raise DeltaCCInputError(
                    f"{self.task_id}: the table's delta.deletedFileRetentionDuration cannot be read ({exc}); "
                    "fix the table property before vacuuming",
                    field="retention_hours",
                    value=self.retention_hours,
                ) from None
        retention = getattr(spec.options, "retention_hours", None)
        if self.force is not True and self.force not in (False, None):
            raise DeltaCCInputError(
                f"{self.task_id}: force={self.force!r} must be exactly True or False",
                field="force",
                value=self.force,
            )
        return {
            "retention_hours": float(retention) if retention is not None else None,
            "table_retention_hours": table_hours,
            "force": self.force is True,
        }


def _as_number(value: Any) -> Any:
    """Rendered templates are strings; pass numbers through and let spec validation name bad ones."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
