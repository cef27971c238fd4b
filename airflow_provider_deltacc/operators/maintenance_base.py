"""The base of OPTIMIZE and VACUUM: ask the gate, wait (deferred or polling), lease, run, release.

Both consult the maintenance gate (:mod:`airflow_provider_deltacc.gate`) before they run: declared write
windows, the live write leases on the table and the conflict matrix. While the gate says wait they poll
in the worker (``deferrable=False``, the default unless ``[deltacc] default_deferrable`` or ``[operators]
default_deferrable`` says otherwise), or defer to
:class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger` with ``deferrable=True`` (no worker slot
held; see :class:`~airflow_provider_deltacc.operators.maintenance_run.MaintenanceRun`).
When the gate says go, the task acquires a maintenance lease atomically (waits again if a writer won the
race), runs the job while heartbeating that lease, and releases it. Writers that would conflict with the
running maintenance wait for its lease, briefly.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.api_support.durations import optional_seconds, seconds_argument
from airflow_provider_deltacc.contract.op_kinds import op_kind
from airflow_provider_deltacc.deployment.config import default_deferrable
from airflow_provider_deltacc.operators.base import DeltaBaseOperator, lease_holder
from airflow_provider_deltacc.operators.maintenance_run import MaintenanceRun

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
    from airflow_provider_deltacc.contract.op_kinds import OpKind
    from airflow_provider_deltacc.contract.spec import JobSpec
    from airflow_provider_deltacc.delta_log.table_facts import TableFacts
    from airflow_provider_deltacc.gate import GateDecision, GateRequest, WriteWindow
    from airflow_provider_deltacc.leases import LeaseStore
    from airflow_provider_deltacc.leases.partitions import PartitionScope


class DeltaMaintenanceOperator(DeltaBaseOperator):
    """A maintenance operation that waits for the gate and holds a maintenance lease while it runs.

    On storage that cannot exclude concurrent writers the run waits for every live lease on the table and
    its own lease blocks every writer. A lease store that cannot be reached fails the try as
    :class:`~airflow_provider_deltacc.exceptions.DeltaCCInfrastructureError` (Airflow retries it):
    maintenance that cannot see the writers does not run.

    :param write_windows: declared write windows (:class:`~airflow_provider_deltacc.gate.WriteWindow` or
        their dict form); those for other tables are ignored.
    :param profile: the engine profile the table's writers commit with (``oss_serializable``,
        ``databricks_write_serializable``, ...), for the conflict matrix.
    :param table_traits: the table's traits
        (:class:`~airflow_provider_deltacc.conflict_matrix.TableTraits` or a dict); None reads
        ``partitioned`` and deletion vectors from the table's log when it is a path.
    :param deferrable: wait in the triggerer instead of polling in the worker; the default is
        ``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False).
    :param poll_interval: the longest pause, in seconds, between two gate decisions while waiting.
    :param gate_wait_timeout: give up after waiting for the gate this long in total (seconds or a
        timedelta); None waits as long as the writers keep writing.
    :param expected_duration: how long the maintenance is expected to take (seconds or a timedelta): a
        declared window that opens within it also blocks.
    :param storage_options: delta-rs storage options, for reading the table's layout and properties; they
        win over those ``aws_conn_id``, ``azure_conn_id`` or ``gcp_conn_id`` give.

    See :class:`~airflow_provider_deltacc.operators.base.DeltaBaseOperator` for the arguments every Delta
    operator takes.
    """

    ui_color = "#8DC63F"
    renamed_arguments = {"max_wait": "gate_wait_timeout"}
    advisor_arguments = (*DeltaBaseOperator.advisor_arguments, "profile", "table_traits")

    def __init__(
        self,
        *,
        write_windows: list[WriteWindow | dict[str, Any]] | None = None,
        profile: EngineProfile | str = "oss_serializable",
        table_traits: TableTraits | dict[str, Any] | None = None,
        deferrable: bool = default_deferrable(),
        poll_interval: float = 30.0,
        gate_wait_timeout: float | timedelta | None = None,
        expected_duration: float | timedelta | None = None,
        storage_options: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.write_windows = write_windows
        self.profile = profile
        self.table_traits = table_traits
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.gate_wait_timeout = gate_wait_timeout
        self.expected_duration = expected_duration
        self.storage_options = storage_options
        self._waiting_since: datetime | None = None

    @cached_property
    def delta_rs_options(self) -> dict[str, str] | None:
        """delta-rs storage options for reading the table: the object-store connections' under
        ``storage_options``."""
        from airflow_provider_deltacc.object_storage.connections import StoreConnections, storage_options_for

        return storage_options_for(StoreConnections.of(self), self.storage_options)

    # -- what subclasses provide -------------------------------------------------------------------
    def maintenance_op(self) -> OpKind:
        """The maintenance operation, for the gate and the lease (from the operation registry)."""
        return op_kind(self.operation, self.kind_options())

    def kind_options(self) -> dict[str, Any]:
        """The options that decide :meth:`maintenance_op`; none by default."""
        return {}

    @abstractmethod
    def gate_fields(self, spec: JobSpec, facts: TableFacts | None) -> dict[str, Any]:
        """This operation's own :class:`~airflow_provider_deltacc.gate.GateRequest` fields."""

    def apply_decision(self, spec: JobSpec, decision: GateDecision) -> tuple[JobSpec, PartitionScope]:
        """The spec to run and the partitions to lease once the gate said go (the whole table: None)."""
        return spec, None

    # -- the flow ----------------------------------------------------------------------------------
    def validate_arguments(self) -> None:
        super().validate_arguments()
        seconds_argument(self.poll_interval, "poll_interval")
        optional_seconds(self.gate_wait_timeout, "gate_wait_timeout")
        optional_seconds(self.expected_duration, "expected_duration")

    def gate_run(self) -> MaintenanceRun:
        """This try's wait at the gate (carried over from before a deferral)."""
        return MaintenanceRun(
            self,
            poll_interval_s=seconds_argument(self.poll_interval, "poll_interval"),
            timeout_s=optional_seconds(self.gate_wait_timeout, "gate_wait_timeout"),
            timeout_name="gate_wait_timeout",
            waiting_since=self._waiting_since,
        )

    def run_spec(self, context: Context, spec: JobSpec) -> dict[str, Any]:
        """Wait for the gate, then run the spec under a maintenance lease."""
        gate = self.gate_run()
        spec, exclusive = self.guard_storage(spec)
        facts = gate.table_facts()
        request = gate.request(self.maintenance_op(), facts, **self.gate_fields(spec, facts))
        if exclusive:
            request = replace(request, exclusive=True)
        return gate.run(
            request, lambda store, decision: self._run_leased(context, spec, request, store, decision)
        )

    def _run_leased(
        self,
        context: Context,
        spec: JobSpec,
        request: GateRequest,
        store: LeaseStore,
        decision: GateDecision,
    ) -> dict[str, Any] | GateDecision:
        """Once the gate said go: the job's report if the lease is won, else the decision to wait on."""
        from airflow_provider_deltacc.contract.op_kinds import OpKind
        from airflow_provider_deltacc.gate import GateDecision
        from airflow_provider_deltacc.leases import LeaseRequest, hold_lease
        from airflow_provider_deltacc.leases.fence import LeaseFence

        run, partitions = self.apply_decision(spec, decision)
        lease = LeaseRequest(
            table=self.table,
            holder=lease_holder(context),
            op_kind=request.maintenance_op,
            partitions=partitions,
            ttl_s=self.lease_ttl_s,
        )
        with hold_lease(
            store, lease, conflicts=request.lease_conflicts(partitions), wait_timeout_s=0
        ) as held:
            if held.acquired:
                self.validate_arguments()
                if request.maintenance_op is not OpKind.VACUUM and not request.exclusive:
                    return self.hook.run(run)
                # VACUUM's lease (and the serializing guard's) is what keeps the data safe: a lapsed one
                # stops the run before it starts, and before each attempt of a loop in this process.
                fence = LeaseFence(held)
                fence.check()
                return self.hook.run(run, turns=fence if self.hook.loop_runs_here else None)
        blockers = "; ".join(lease.describe() for lease in held.blocking)
        reason = f"waiting: a writer took a conflicting lease after the gate said go: {blockers}"
        self.log.info("gate: %s on %s: %s", request.maintenance_op.name, self.table, reason)
        return GateDecision(False, None, reason, [b.describe() for b in held.blocking], decided_at=None)

    def execute_complete(
        self, context: Context, event: dict[str, Any] | None = None, waiting_since: str | None = None
    ) -> dict[str, Any]:
        """Resume after the trigger: on go, decide again, take the lease and run (or defer again)."""
        self.gate_run().resume(event)
        self._waiting_since = datetime.fromisoformat(waiting_since) if waiting_since else None
        return self.execute(context)
