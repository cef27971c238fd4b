"""Maintenance operators: OPTIMIZE (compaction, optional Z-order) and VACUUM (with a retention guard).

Both consult the maintenance gate (:mod:`airflow_provider_deltacc.windows`) before they run: declared write
windows, the live write leases on the table and the conflict matrix. While the gate says wait they defer
to :class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger` (no worker slot held), or poll in the
worker with ``deferrable=False``. When the gate says go, the task acquires a maintenance lease atomically
(defers again if a writer won the race), runs the job while heartbeating that lease, and releases it.
Writers that would conflict with the running maintenance wait for its lease, briefly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.config import default_deferrable
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.occ.operations import op_kind
from airflow_provider_deltacc.operators import parse_time
from airflow_provider_deltacc.operators.base import DeltaBaseOperator, lease_holder

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
    from airflow_provider_deltacc.occ.operations import OpKind
    from airflow_provider_deltacc.windows import GateDecision, GateRequest, TableFacts, WriteWindow
    from airflow_provider_deltacc.windows.partitions import PartitionScope

RESUME_METHOD = "execute_complete"


def _optional_seconds(value: float | timedelta | None, name: str) -> float | None:
    if value is None or value == "":
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 0:
        raise DeltaCCInputError(f"{name}={value!r} must not be negative", field=name, value=value)
    return seconds


class _GatedMaintenanceOperator(DeltaBaseOperator):
    """What OPTIMIZE and VACUUM share: ask the gate, wait (deferred or polling), lease, run, release.

    :param write_windows: declared write windows (:class:`~airflow_provider_deltacc.windows.WriteWindow` or
        their dict form); those for other tables are ignored.
    :param profile: the engine profile the table's writers commit with (``oss_serializable``,
        ``databricks_write_serializable``, ...), for the conflict matrix.
    :param table_traits: the table's traits
        (:class:`~airflow_provider_deltacc.conflict_matrix.TableTraits` or a dict); None reads
        ``partitioned`` and deletion vectors from the table's log when it is a path.
    :param deferrable: wait in the triggerer instead of polling in the worker; the default is
        ``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False).
    :param poll_interval: the longest pause, in seconds, between two gate decisions while waiting.
    :param max_wait: give up after waiting this long in total (seconds or a timedelta); None waits as long
        as the writers keep writing.
    :param expected_duration: how long the maintenance is expected to take (seconds or a timedelta): a
        declared window that opens within it also blocks.
    :param storage_options: delta-rs storage options, for reading the table's layout and properties.
    """

    writes_data = False
    ui_color = "#8DC63F"

    def __init__(
        self,
        *,
        write_windows: list[WriteWindow | dict[str, Any]] | None = None,
        profile: EngineProfile | str = "oss_serializable",
        table_traits: TableTraits | dict[str, Any] | None = None,
        deferrable: bool = default_deferrable(),
        poll_interval: float = 30.0,
        max_wait: float | timedelta | None = None,
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
        self.max_wait = max_wait
        self.expected_duration = expected_duration
        self.storage_options = storage_options
        self._waiting_since: datetime | None = None

    # -- what subclasses provide -------------------------------------------------------------------
    def maintenance_op(self) -> OpKind:
        """The maintenance operation, for the gate and the lease."""
        return op_kind(self.operation, self.kind_options())

    def kind_options(self) -> dict[str, Any]:
        """The options that decide :meth:`maintenance_op`; none by default."""
        return {}

    def gate_request(self, spec: dict[str, Any], facts: TableFacts | None) -> GateRequest:
        """The question to the gate for this run."""
        raise NotImplementedError

    def apply_decision(
        self, spec: dict[str, Any], decision: GateDecision
    ) -> tuple[dict[str, Any], PartitionScope]:
        """The spec to run and the partitions to lease once the gate said go (the whole table: None)."""
        return spec, None

    # -- shared ------------------------------------------------------------------------------------
    def table_facts(self) -> TableFacts | None:
        """The table's partition columns and properties from its log, or None (catalog name, unreadable)."""
        from airflow_provider_deltacc.windows import read_table_facts

        try:
            return read_table_facts(self.table, self.storage_options)
        except Exception as exc:
            self.log.warning("cannot read %s with delta-rs (%s: %s)", self.table, type(exc).__name__, exc)
            return None

    def _request_kwargs(self, facts: TableFacts | None) -> dict[str, Any]:
        from airflow_provider_deltacc.windows.request import parse_profile, parse_traits, parse_windows

        try:
            traits = parse_traits(self.table_traits)
            return {
                "table": self.table,
                "maintenance_op": self.maintenance_op(),
                "windows": parse_windows(self.write_windows),
                "profile": parse_profile(self.profile),
                "traits": traits if traits is not None else (facts.traits() if facts is not None else None),
                "expected_duration_s": _optional_seconds(self.expected_duration, "expected_duration"),
            }
        except ValueError as exc:
            raise DeltaCCInputError(f"{self.task_id}: {exc}") from None

    def run_spec(self, context: Context, spec: dict[str, Any]) -> dict[str, Any]:
        """Wait for the gate, then run the spec under a maintenance lease (replaces the writer lease).

        On storage that cannot exclude concurrent writers the run waits for every live lease on the table
        and its own lease blocks every writer (see :meth:`DeltaBaseOperator.guard_storage`).

        A lease store that cannot be reached fails the try as :class:`DeltaCCInfrastructureError` (Airflow
        retries it): maintenance that cannot see the writers does not run.
        """
        from airflow_provider_deltacc.windows import LeaseStoreUnavailable

        spec, exclusive = self.guard_storage(spec)
        request = self.gate_request(spec, self.table_facts())
        if exclusive:
            request = replace(request, exclusive=True)
        waiting_since = self._waiting_since or datetime.now(UTC)
        while True:
            try:
                outcome = self._attempt(context, spec, request)
            except LeaseStoreUnavailable as exc:
                raise DeltaCCInfrastructureError.lease_store(self.task_id, exc.store, str(exc)) from None
            if isinstance(outcome, dict):
                return outcome
            self._wait(request, outcome, waiting_since)

    def _attempt(
        self, context: Context, spec: dict[str, Any], request: GateRequest
    ) -> dict[str, Any] | GateDecision:
        """One decision; if it is go and the lease is won, the job's report, else the decision to wait on."""
        from airflow_provider_deltacc.windows import GateDecision, LeaseRequest, hold_lease

        with self.open_lease_store() as store:
            decision = request.decide(store)
            self.log.info("gate: %s on %s: %s", request.maintenance_op.name, self.table, decision.reason)
            if decision.refused:
                raise DeltaCCInputError(
                    f"{self.task_id}: {decision.reason}",
                    field="retention_hours",
                    value=request.retention_hours,
                )
            if not decision.go:
                return decision
            run, partitions = self.apply_decision(spec, decision)
            lease = LeaseRequest(
                table=self.table,
                holder=lease_holder(context),
                op_kind=request.maintenance_op,
                partitions=partitions,
                ttl_s=float(self.lease_ttl),
            )
            with hold_lease(
                store, lease, conflicts=request.lease_conflicts(partitions), wait_timeout_s=0
            ) as held:
                if held.acquired:
                    self.validate_spec(run)
                    return self.hook.run(run)
            blockers = "; ".join(lease.describe() for lease in held.blocking)
            reason = f"waiting: a writer took a conflicting lease after the gate said go: {blockers}"
            self.log.info("gate: %s on %s: %s", request.maintenance_op.name, self.table, reason)
            return GateDecision(False, None, reason, [b.describe() for b in held.blocking], decided_at=None)

    def _remaining_wait(self, waiting_since: datetime) -> float | None:
        limit = _optional_seconds(self.max_wait, "max_wait")
        if limit is None:
            return None
        return limit - (datetime.now(UTC) - waiting_since).total_seconds()

    def _wait(self, request: GateRequest, decision: GateDecision, waiting_since: datetime) -> None:
        """Defer to the gate trigger, or sleep in the worker; fail once ``max_wait`` is spent."""
        from airflow_provider_deltacc.windows import poll_delay

        remaining = self._remaining_wait(waiting_since)
        if remaining is not None and remaining <= 0:
            raise AirflowException(
                f"{self.task_id}: gave up waiting for the gate on {self.table} after "
                f"max_wait={self.max_wait}; last decision: {decision.reason}"
            )
        if self.deferrable:
            from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger

            self.defer(
                trigger=DeltaGateTrigger(
                    request=request.to_dict(),
                    poll_interval=float(self.poll_interval),
                    **self.lease_store().trigger_kwargs(),
                ),
                method_name=RESUME_METHOD,
                kwargs={"waiting_since": waiting_since.isoformat()},
                timeout=timedelta(seconds=remaining) if remaining is not None else None,
            )
        delay = poll_delay(decision, float(self.poll_interval), datetime.now(UTC))
        if remaining is not None:
            delay = min(delay, max(remaining, 0.0))
        time.sleep(delay)

    def execute_complete(
        self, context: Context, event: dict[str, Any] | None = None, waiting_since: str | None = None
    ) -> dict[str, Any]:
        """Resume after the trigger: on go, decide again, take the lease and run (or defer again)."""
        payload = event or {}
        status = payload.get("status")
        decision = payload.get("decision") or {}
        if status == "refused":
            raise DeltaCCInputError(
                f"{self.task_id}: {decision.get('reason', 'the gate refused')}", field="retention_hours"
            )
        if status != "go":
            message = payload.get("message", "no event")
            if payload.get("field"):  # bad input the triggerer met (the lease store's connection)
                raise DeltaCCInputError(f"{self.task_id}: {message}", field=payload["field"])
            if store := payload.get("lease_store"):
                raise DeltaCCInfrastructureError.lease_store(self.task_id, store, message)
            raise AirflowException(f"{self.task_id}: waiting for the gate on {self.table} failed: {message}")
        self.log.info("gate trigger on %s: %s", self.table, decision.get("reason", "go"))
        self._waiting_since = datetime.fromisoformat(waiting_since) if waiting_since else None
        return self.execute(context)


class DeltaOptimizeOperator(_GatedMaintenanceOperator):
    """Compact small files, optionally only in some partitions and with Z-ordering; waits for the gate.

    Compaction commits with ``dataChange=false``: it never fails a concurrent blind append, but it does
    fail DML that read the files it rewrites, and two OPTIMIZEs over the same files collide. So it waits for
    write leases and declared windows of DML on its partitions (not for appends), and holds an OPTIMIZE
    lease while it runs.

    :param partition_values: only these partitions, e.g. ``[{"date": "2026-11-19"}]``. (templated)
    :param zorder_by: Z-order by these columns.
    :param only_closed_partitions: compact only the partitions no conflicting lease or window touches (of
        ``partition_values``, or else of every partition the table has, read with delta-rs); wait while
        none is closed. False waits until all of them (or the whole table) are free.
    :param full: on a liquid-clustered table, ``OPTIMIZE … FULL``: recluster every file, not only those
        incremental clustering picks (after ``ALTER TABLE … CLUSTER BY`` changed the columns). Clustered
        tables only; not with ``zorder_by`` or ``partition_values``. A plain OPTIMIZE of a clustered table
        already clusters incrementally.

    See :class:`_GatedMaintenanceOperator` for the gate arguments.
    """

    operation = "optimize"
    template_fields: Sequence[str] = (*DeltaBaseOperator.template_fields, "partition_values")

    def __init__(
        self,
        *,
        partition_values: list[dict[str, Any]] | None = None,
        zorder_by: list[str] | None = None,
        only_closed_partitions: bool = False,
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

    def build_options(self, context: Context) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if self.partition_values:
            options["partition_values"] = self.partition_values
        if self.zorder_by:
            options["zorder_by"] = self.zorder_by
        if self.full:
            options["full"] = True
        return options

    def kind_options(self) -> dict[str, Any]:
        return {"zorder_by": self.zorder_by}

    def _candidates(self, facts: TableFacts | None) -> PartitionScope:
        from airflow_provider_deltacc.windows import table_partitions
        from airflow_provider_deltacc.windows.writer import canonical_scope

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
            found = table_partitions(self.table, self.storage_options)
        except Exception as exc:
            self.log.warning(
                "cannot list the partitions of %s (%s); waiting for the whole table", self.table, exc
            )
            return None
        return found or None

    def gate_request(self, spec: dict[str, Any], facts: TableFacts | None) -> GateRequest:
        from airflow_provider_deltacc.windows import GateRequest

        return GateRequest(
            **self._request_kwargs(facts),
            partitions=self._candidates(facts),
            require_all_partitions=not self.only_closed_partitions,
        )

    def apply_decision(
        self, spec: dict[str, Any], decision: GateDecision
    ) -> tuple[dict[str, Any], PartitionScope]:
        closed = decision.closed_partitions
        if closed is None:
            return spec, None
        options = {**(spec.get("options") or {}), "partition_values": [dict(p) for p in closed]}
        return {**spec, "options": options}, closed


class DeltaVacuumOperator(_GatedMaintenanceOperator):
    """Delete files no longer referenced by the table; waits until no writer is active on the table.

    Before any wait it refuses (fails, without retries) a ``retention_hours`` shorter than the table's
    ``delta.deletedFileRetentionDuration`` (read from the log with delta-rs for a path; Delta's default of
    168 h otherwise) or than the age of the oldest active lease, unless ``force=True``.

    :param retention_hours: keep files newer than this; never below ``delta.deletedFileRetentionDuration``
        unless ``force=True``. Delta >= 4.1 ignores a non-zero RETAIN by default; the job detects that,
        honours the request and reports it. (templated)
    :param force: allow an unsafe retention (it still waits for every writer).
    :param list_only: a dry run: only list what would be deleted (``dry_run`` is taken by BaseOperator).

    See :class:`_GatedMaintenanceOperator` for the gate arguments.
    """

    operation = "vacuum"
    template_fields: Sequence[str] = (*DeltaBaseOperator.template_fields, "retention_hours")

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

    def build_options(self, context: Context) -> dict[str, Any]:
        options: dict[str, Any] = {"force": self.force, "dry_run": self.list_only}
        if self.retention_hours not in (None, ""):
            options["retention_hours"] = _as_number(self.retention_hours)
        return options

    def gate_request(self, spec: dict[str, Any], facts: TableFacts | None) -> GateRequest:
        from airflow_provider_deltacc.windows import DELTA_DEFAULT_RETENTION_HOURS, GateRequest

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
        retention = (spec.get("options") or {}).get("retention_hours")
        if self.force is not True and self.force not in (False, None):
            raise DeltaCCInputError(
                f"{self.task_id}: force={self.force!r} must be exactly True or False",
                field="force",
                value=self.force,
            )
        return GateRequest(
            **self._request_kwargs(facts),
            retention_hours=float(retention) if retention is not None else None,
            table_retention_hours=table_hours,
            force=self.force is True,
        )


def _as_number(value: Any) -> Any:
    """Rendered templates are strings; pass numbers through and let spec validation name bad ones."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
