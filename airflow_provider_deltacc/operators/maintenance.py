"""Maintenance operators: OPTIMIZE (compaction, optional Z-order) and VACUUM (with a retention guard)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.occ.decisions import OperationClass
from airflow_provider_deltacc.operators.base import DeltaBaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context


class DeltaOptimizeOperator(DeltaBaseOperator):
    """Compact small files, optionally only in some partitions and with Z-ordering.

    Compaction commits with ``dataChange=false``: it never fails a concurrent blind append, but it does
    fail DML that read the files it rewrites, and two OPTIMIZEs over the same files collide.

    :param partition_values: only these partitions, e.g. ``[{"date": "2026-11-19"}]``. (templated)
    :param zorder_by: Z-order by these columns.
    """

    operation = "optimize"
    operation_class = OperationClass.MAINTENANCE
    writes_data = False
    template_fields: Sequence[str] = (*DeltaBaseOperator.template_fields, "partition_values")
    ui_color = "#8DC63F"

    def __init__(
        self,
        *,
        partition_values: list[dict[str, Any]] | None = None,
        zorder_by: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.partition_values = partition_values
        self.zorder_by = zorder_by

    def build_options(self, context: Context) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.partition_values:
            options["partition_values"] = self.partition_values
        if self.zorder_by:
            options["zorder_by"] = self.zorder_by
        return options


class DeltaVacuumOperator(DeltaBaseOperator):
    """Delete files no longer referenced by the table, never below the table's retention unless forced.

    :param retention_hours: keep files newer than this; never below ``delta.deletedFileRetentionDuration``
        unless ``force=True``. Delta >= 4.1 ignores a non-zero RETAIN by default; the job detects that,
        honours the request and reports it. (templated)
    :param force: allow a retention below the table's (unsafe while writers may be active).
    :param list_only: a dry run: only list what would be deleted (``dry_run`` is taken by BaseOperator).
    """

    operation = "vacuum"
    operation_class = OperationClass.MAINTENANCE
    writes_data = False
    template_fields: Sequence[str] = (*DeltaBaseOperator.template_fields, "retention_hours")
    ui_color = "#8DC63F"

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

    def build_options(self, context: Context) -> dict[str, Any]:
        options: dict[str, Any] = {"force": self.force, "dry_run": self.list_only}
        if self.retention_hours not in (None, ""):
            options["retention_hours"] = _as_number(self.retention_hours)
        return options


def _as_number(value: Any) -> Any:
    """Rendered templates are strings; pass numbers through and let spec validation name bad ones."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
