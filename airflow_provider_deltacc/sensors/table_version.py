"""DeltaTableVersionSensor: wait for a new commit, a commit of some operation, or data in a partition."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.api_support.arguments import RefusesRenamedArguments
from airflow_provider_deltacc.api_support.durations import seconds_argument
from airflow_provider_deltacc.deployment.config import default_deferrable
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.sensors.arguments import DEFAULT_POKE_INTERVAL, sensor_arguments

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.delta_log.reads import TableCondition


class DeltaTableVersionSensor(RefusesRenamedArguments, BaseSensorOperator):
    """Wait until a Delta table has a commit newer than a version, a commit of an operation, or data in
    a partition (all given conditions must hold).

    Deferrable (``[deltacc] default_deferrable``, else ``[operators] default_deferrable``, else False, as
    for :class:`~airflow_provider_deltacc.sensors.write_window.DeltaWriteWindowSensor`): the wait runs in the
    triggerer (:class:`~airflow_provider_deltacc.triggers.table_version.DeltaTableTrigger`), which reads the
    log with delta-rs, so no worker slot and no JVM is held. With ``deferrable=False`` it pokes in
    ``reschedule`` mode, a delta-rs read on a worker every ``poke_interval``, freeing the slot in between.
    Either way the matching commit is the task's XCom.

    :param table: the table's storage location (path or URI). (templated)
    :param after_version: wait for a commit newer than this version. (templated)
    :param operation: wait for a commit of this operation, e.g. ``MERGE``. (templated)
    :param partition_values: wait for data in this partition: its column → value, as in Delta's
        ``partitionValues``, e.g. ``{"date": "2026-11-19"}``. (templated)
    :param storage_options: delta-rs storage options (object-store credentials); they win over those
        ``aws_conn_id`` gives.
    :param aws_conn_id: an ``aws`` connection for a table on S3: its keys, region and endpoint as delta-rs
        storage options. The trigger gets only its name and looks it up in the triggerer, so no secret is in
        the trigger's serialized arguments. (templated)
    :param azure_conn_id: a ``wasb`` or ``adls`` connection for a table on ADLS, the same way. (templated)
    :param gcp_conn_id: a ``google_cloud_platform`` connection for a table on GCS, the same way. (templated)
    :param deferrable: wait in the triggerer instead of rescheduling on a worker; the default is
        ``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False). (It was True before
        this release: set ``[deltacc] default_deferrable = True``, or pass ``deferrable=True``, to keep that.)
    :param poke_interval: seconds (or a timedelta) between reads of the log, in the triggerer or on a worker;
        30 s by default.
    """

    template_fields: Sequence[str] = (
        "table",
        "after_version",
        "operation",
        "partition_values",
        "aws_conn_id",
        "azure_conn_id",
        "gcp_conn_id",
    )
    renamed_arguments = {"partition": "partition_values", "poll_interval": "poke_interval"}
    ui_color = "#e6f1f2"

    def __init__(
        self,
        *,
        table: str,
        after_version: int | str | None = None,
        operation: str | None = None,
        partition_values: dict[str, Any] | None = None,
        storage_options: dict[str, str] | None = None,
        aws_conn_id: str | None = None,
        azure_conn_id: str | None = None,
        gcp_conn_id: str | None = None,
        deferrable: bool = default_deferrable(),
        poke_interval: float | timedelta = DEFAULT_POKE_INTERVAL,
        **kwargs: Any,
    ) -> None:
        sensor_arguments(
            kwargs, owner=type(self).__name__, renamed=self.renamed_arguments, deferrable=deferrable
        )
        super().__init__(poke_interval=poke_interval, **kwargs)
        self.table = table
        self.after_version = after_version
        self.operation = operation
        self.partition_values = partition_values
        self.storage_options = storage_options
        self.aws_conn_id = aws_conn_id
        self.azure_conn_id = azure_conn_id
        self.gcp_conn_id = gcp_conn_id
        self.deferrable = deferrable

    def _condition(self) -> TableCondition:
        from airflow_provider_deltacc.delta_log.reads import TableCondition

        after: int | None = None
        if self.after_version not in (None, ""):
            try:
                after = int(self.after_version)
            except (TypeError, ValueError):
                raise DeltaCCInputError(
                    f"after_version={self.after_version!r} is not an integer table version",
                    field="after_version",
                    value=self.after_version,
                ) from None
        partition = {str(k): str(v) for k, v in (self.partition_values or {}).items()}
        return TableCondition(after_version=after, operation=self.operation or None, partition=partition)

    def _check(self) -> dict[str, Any] | None:
        from airflow_provider_deltacc.delta_log.reads import check_table, require_table_location
        from airflow_provider_deltacc.object_storage.connections import StoreConnections, storage_options_for

        options = storage_options_for(StoreConnections.of(self), self.storage_options)
        return check_table(require_table_location(self.table), self._condition(), options)

    def poke(self, context: Context) -> PokeReturnValue:
        """Read the log once; done with the matching commit as XCom, as a deferred wait returns it."""
        match = self._check()
        if match is not None:
            self.log.info("Delta table %s satisfied the condition: %s", self.table, match)
        return PokeReturnValue(is_done=match is not None, xcom_value=match)

    def execute(self, context: Context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        match = self._check()
        if match is not None:
            self.log.info("Delta table %s already satisfies the condition: %s", self.table, match)
            return match
        from airflow_provider_deltacc.delta_log.reads import require_table_location
        from airflow_provider_deltacc.triggers.table_version import DeltaTableTrigger

        self.defer(
            trigger=DeltaTableTrigger(
                table=require_table_location(self.table).name,
                condition=self._condition().to_dict(),
                poll_interval=seconds_argument(self.poke_interval, "poke_interval"),
                storage_options=self.storage_options,
                aws_conn_id=self.aws_conn_id,
                azure_conn_id=self.azure_conn_id,
                gcp_conn_id=self.gcp_conn_id,
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout else None,
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        if not event or event.get("status") != "success":
            message = (event or {}).get("message", "no event")
            raise AirflowException(f"waiting for Delta table {self.table} failed: {message}")
        self.log.info("Delta table %s satisfied the condition: %s", self.table, event["match"])
        return event["match"]
