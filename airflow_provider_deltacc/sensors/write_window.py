"""DeltaWriteWindowSensor: wait for a quiet window on a Delta table for a maintenance operation."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from airflow_provider_deltacc.api_support.arguments import RefusesRenamedArguments
from airflow_provider_deltacc.api_support.durations import seconds_argument
from airflow_provider_deltacc.deployment.config import default_deferrable
from airflow_provider_deltacc.hooks.lease_store import UsesLeaseStore
from airflow_provider_deltacc.operators.base import DEFAULT_AIRFLOW_RETRIES, DEFAULT_RETRY_POLICY
from airflow_provider_deltacc.operators.maintenance_run import MaintenanceRun
from airflow_provider_deltacc.sensors.arguments import DEFAULT_POKE_INTERVAL, sensor_arguments

if TYPE_CHECKING:
    from airflow.sdk import Context, RetryPolicy

    from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
    from airflow_provider_deltacc.gate import GateRequest, WriteWindow


class DeltaWriteWindowSensor(RefusesRenamedArguments, UsesLeaseStore, BaseSensorOperator):
    """Wait until the maintenance gate would let ``maintenance_op`` run on a table now.

    "Quiet" means what the gate means: no declared write window and no live write lease that can conflict
    with the operation, per the conflict matrix and the partitions (OPTIMIZE does not wait for blind
    appends; VACUUM waits for every writer). The sensor takes no lease: an operator that must not overlap
    writers (:class:`~airflow_provider_deltacc.operators.maintenance.DeltaOptimizeOperator`,
    :class:`~airflow_provider_deltacc.operators.maintenance.DeltaVacuumOperator`) still asks the gate and
    takes its lease itself. Returns the gate's decision as a dict (XCom), with ``closed_partitions``.

    Deferrable (``[deltacc] default_deferrable``, else ``[operators] default_deferrable``, else False, as
    for :class:`~airflow_provider_deltacc.sensors.table_version.DeltaTableVersionSensor`): the wait runs in
    the triggerer (:class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger`), no worker slot held.
    With ``deferrable=False`` it pokes in ``reschedule`` mode.

    Like writers and maintenance it refuses, at its start, a SQLite lease store where tasks may run on other
    machines (its answer would only cover this machine's writers); see
    :mod:`airflow_provider_deltacc.hooks.lease_store`.

    :param table: the table's name or path, as the writers' leases spell it. (templated)
    :param maintenance_op: ``optimize``, ``optimize_zorder`` or ``vacuum``.
    :param partition_values: for OPTIMIZE, wait until all of these partitions are quiet, e.g.
        ``[{"date": "2026-11-19"}]``; None for the whole table. (templated)
    :param write_windows: declared write windows (objects or dicts).
    :param profile: the engine profile the writers commit with.
    :param table_traits: the table's traits; None reads them from the log when the table is a path.
    :param lease_store_url: the older way to name the lease store, when no ``lease_store_conn_id`` is set;
        None reads ``$DELTACC_LEASE_STORE_URL``, else the embedded SQLite file.
    :param expected_duration: the maintenance's expected duration (seconds or a timedelta): a window that
        opens within it counts as busy.
    :param storage_options: delta-rs storage options; they win over those ``aws_conn_id`` gives.
    :param aws_conn_id: an ``aws`` connection for a table on S3: its keys, region and endpoint as delta-rs
        storage options (see :mod:`airflow_provider_deltacc.object_storage`). (templated)
    :param azure_conn_id: a ``wasb`` or ``adls`` connection for a table on ADLS, the same way. (templated)
    :param gcp_conn_id: a ``google_cloud_platform`` connection for a table on GCS, the same way. (templated)
    :param deferrable: wait in the triggerer instead of rescheduling on a worker; the default is
        ``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False).
    :param poke_interval: the longest pause between two gate decisions, in seconds (or a timedelta), in the
        triggerer or on a worker; 30 s by default.
    :param lease_store_conn_id: the lease store's ``postgres`` or ``sqlite`` connection; None reads
        ``[deltacc] lease_store_conn_id``, then ``lease_store_url``.
    :param retries: Airflow retries, as for the Delta operators: a lease store that cannot be reached fails
        the try as :class:`~airflow_provider_deltacc.exceptions.DeltaCCInfrastructureError`, which the retry
        policy retries with the task's own ``retry_delay``.
    :param retry_policy: the Airflow retry policy; the Delta operators' ``DeltaConflictRetryPolicy`` by
        default.
    """

    template_fields: Sequence[str] = (
        "table",
        "partition_values",
        "aws_conn_id",
        "azure_conn_id",
        "gcp_conn_id",
    )
    renamed_arguments = {"partitions": "partition_values", "poll_interval": "poke_interval"}
    ui_color = "#e6f1f2"

    def __init__(
        self,
        *,
        table: str,
        maintenance_op: str = "optimize",
        partition_values: list[dict[str, Any]] | None = None,
        write_windows: list[WriteWindow | dict[str, Any]] | None = None,
        profile: EngineProfile | str = "oss_serializable",
        table_traits: TableTraits | dict[str, Any] | None = None,
        lease_store_url: str | None = None,
        expected_duration: float | timedelta | None = None,
        storage_options: dict[str, str] | None = None,
        aws_conn_id: str | None = None,
        azure_conn_id: str | None = None,
        gcp_conn_id: str | None = None,
        deferrable: bool = default_deferrable(),
        poke_interval: float | timedelta = DEFAULT_POKE_INTERVAL,
        lease_store_conn_id: str | None = None,
        retries: int | None = DEFAULT_AIRFLOW_RETRIES,
        retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
        **kwargs: Any,
    ) -> None:
        sensor_arguments(
            kwargs, owner=type(self).__name__, renamed=self.renamed_arguments, deferrable=deferrable
        )
        super().__init__(poke_interval=poke_interval, retries=retries, retry_policy=retry_policy, **kwargs)
        self.table = table
        self.maintenance_op = maintenance_op
        self.partition_values = partition_values
        self.write_windows = write_windows
        self.profile = profile
        self.table_traits = table_traits
        self.lease_store_url = lease_store_url
        self.expected_duration = expected_duration
        self.storage_options = storage_options
        self.aws_conn_id = aws_conn_id
        self.azure_conn_id = azure_conn_id
        self.gcp_conn_id = gcp_conn_id
        self.deferrable = deferrable
        self.lease_store_conn_id = lease_store_conn_id

    @cached_property
    def delta_rs_options(self) -> dict[str, str] | None:
        """delta-rs storage options for reading the table: ``aws_conn_id``'s under ``storage_options``."""
        from airflow_provider_deltacc.object_storage.connections import StoreConnections, storage_options_for

        return storage_options_for(StoreConnections.of(self), self.storage_options)

    def gate_run(self) -> MaintenanceRun:
        """This wait at the gate, limited by the sensor's ``timeout``."""
        return MaintenanceRun(
            self,
            poll_interval_s=seconds_argument(self.poke_interval, "poke_interval"),
            timeout_s=float(self.timeout) if self.timeout else None,
        )

    def _request(self, gate: MaintenanceRun) -> GateRequest:
        from airflow_provider_deltacc.turns.writer import canonical_scope

        facts = gate.table_facts()
        partitions = canonical_scope(self.partition_values, facts) if self.partition_values else None
        return gate.request(self.maintenance_op, facts, partitions=partitions, require_all_partitions=True)

    def _decide(self) -> dict[str, Any]:
        gate = self.gate_run()
        return gate.decide(self._request(gate)).to_dict()

    def poke(self, context: Context) -> PokeReturnValue:
        decision = self._decide()
        return PokeReturnValue(is_done=bool(decision["go"]), xcom_value=decision)

    def execute(self, context: Context) -> Any:
        self.log.info("lease store: %s", self.resolve_lease_store().describe())
        if not self.deferrable:
            return super().execute(context)
        gate = self.gate_run()
        request = self._request(gate)
        decision = gate.decide(request)
        if decision.go:
            return decision.to_dict()
        gate.defer(request)

    def execute_complete(
        self, context: Context, event: dict[str, Any] | None = None, waiting_since: str | None = None
    ) -> Any:
        """Resume after the trigger: the gate's decision on go, else the event's error."""
        return self.gate_run().resume(event)
