"""One maintenance task's wait at the gate: decide, poll in the worker or defer to the triggerer, resume.

Shared by OPTIMIZE and VACUUM
(:class:`~airflow_provider_deltacc.operators.maintenance_base.DeltaMaintenanceOperator`, which also take
their maintenance lease once the gate says go) and by
:class:`~airflow_provider_deltacc.sensors.write_window.DeltaWriteWindowSensor` (which only asks). While the
gate says wait, a deferrable task defers to
:class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger` (no worker slot held) and resumes in
``execute_complete`` with the trigger's event (:meth:`MaintenanceRun.resume`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.api_support.durations import optional_seconds
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError

if TYPE_CHECKING:
    from airflow_provider_deltacc.delta_log.table_facts import TableFacts
    from airflow_provider_deltacc.gate import GateDecision, GateRequest
    from airflow_provider_deltacc.hooks.lease_store import LeaseStoreTarget
    from airflow_provider_deltacc.leases import LeaseStore

RESUME_METHOD = "execute_complete"
#: One try at running once the gate said go: the job's report, or the decision to wait on (a lost race).
Attempt = Callable[["LeaseStore", "GateDecision"], "dict[str, Any] | GateDecision"]


class GatedTask(Protocol):
    """What a task that waits at the gate has: its gate arguments, its lease store, ``defer``."""

    task_id: str
    table: str
    write_windows: Any
    profile: Any
    table_traits: Any
    expected_duration: Any
    deferrable: bool

    @property
    def log(self) -> Any: ...

    @property
    def delta_rs_options(self) -> dict[str, str] | None: ...

    def lease_store(self) -> LeaseStoreTarget: ...

    def open_lease_store(self) -> LeaseStore: ...

    def defer(
        self, *, trigger: Any, method_name: str, kwargs: Any = None, timeout: Any = None
    ) -> NoReturn: ...


class MaintenanceRun:
    """One task's wait at the gate.

    :param task: the waiting task.
    :param poll_interval_s: the longest pause between two gate decisions, in seconds (the operators'
        ``poll_interval``, the sensor's ``poke_interval``).
    :param timeout_s: the longest wait in total, in seconds; None waits as long as the writers keep writing.
    :param timeout_name: the argument ``timeout_s`` came from, for the error when it is spent.
    :param waiting_since: when the wait began (a resumed task carries it over); None for now.
    """

    def __init__(
        self,
        task: GatedTask,
        *,
        poll_interval_s: float,
        timeout_s: float | None = None,
        timeout_name: str = "timeout",
        waiting_since: datetime | None = None,
    ) -> None:
        self.task = task
        self.poll_interval_s = poll_interval_s
        self.timeout_s = timeout_s
        self.timeout_name = timeout_name
        self.waiting_since = waiting_since or datetime.now(UTC)

    def table_facts(self) -> TableFacts | None:
        """The table's partition columns and properties from its log, or None (catalog name, unreadable)."""
        from airflow_provider_deltacc.delta_log.table_facts import read_table_facts

        try:
            return read_table_facts(Table(self.task.table), self.task.delta_rs_options)
        except Exception as exc:
            self.task.log.warning(
                "cannot read %s with delta-rs (%s: %s)", self.task.table, type(exc).__name__, exc
            )
            return None

    def request(self, maintenance_op: Any, facts: TableFacts | None, **fields: Any) -> GateRequest:
        """The task's question to the gate: its windows, profile, traits (else the log's) and duration.

        :param maintenance_op: OPTIMIZE, OPTIMIZE_ZORDER or VACUUM (or its name).
        :param facts: the table's facts, for its traits when the task gives none.
        :param fields: the operation's own :class:`~airflow_provider_deltacc.gate.GateRequest` fields.
        :raises DeltaCCInputError: a bad gate argument.
        """
        from airflow_provider_deltacc.gate import GateRequest
        from airflow_provider_deltacc.gate.request import parse_traits

        task = self.task
        expected_s = optional_seconds(task.expected_duration, "expected_duration")
        try:
            traits = parse_traits(task.table_traits)
            return GateRequest(
                table=task.table,
                maintenance_op=maintenance_op,
                windows=task.write_windows or (),
                profile=task.profile,
                traits=traits if traits is not None else (facts.traits() if facts is not None else None),
                expected_duration_s=expected_s,
                **fields,
            )
        except ValueError as exc:
            raise DeltaCCInputError(f"{task.task_id}: {exc}") from None

    def decide(self, request: GateRequest) -> GateDecision:
        """Ask the gate once.

        :raises DeltaCCInfrastructureError: the lease store cannot be reached (Airflow retries).
        """
        from airflow_provider_deltacc.contract.exceptions import LeaseStoreUnavailable

        try:
            with self.task.open_lease_store() as store:
                return self._decide(request, store)
        except LeaseStoreUnavailable as exc:
            raise DeltaCCInfrastructureError.lease_store(self.task.task_id, exc.store, str(exc)) from None

    def run(self, request: GateRequest, attempt: Attempt) -> dict[str, Any]:
        """Ask the gate until it says go and ``attempt`` returns a report; wait (poll or defer) in between.

        :param request: the question to the gate.
        :param attempt: runs the maintenance once the gate said go, with the store it was asked in.
        :raises DeltaCCInputError: the gate refused (an unsafe VACUUM retention).
        :raises DeltaCCInfrastructureError: the lease store cannot be reached: maintenance that cannot see
            the writers does not run.
        :raises AirflowException: the wait outlasted ``timeout_s``.
        """
        from airflow_provider_deltacc.contract.exceptions import LeaseStoreUnavailable

        while True:
            try:
                with self.task.open_lease_store() as store:
                    decision = self._decide(request, store)
                    outcome = attempt(store, decision) if decision.go else decision
            except LeaseStoreUnavailable as exc:
                raise DeltaCCInfrastructureError.lease_store(self.task.task_id, exc.store, str(exc)) from None
            if isinstance(outcome, dict):
                self._record_gate("go", request)
                return outcome
            self.wait(request, outcome)

    def _decide(self, request: GateRequest, store: LeaseStore) -> GateDecision:
        decision = request.decide(store)
        self.task.log.info(
            "gate: %s on %s: %s", request.maintenance_op.name, self.task.table, decision.reason
        )
        if decision.refused:
            self._record_gate("refused", request)
            raise DeltaCCInputError(
                f"{self.task.task_id}: {decision.reason}",
                field="retention_hours",
                value=request.retention_hours,
            )
        return decision

    def _record_gate(self, outcome: str, request: GateRequest) -> None:
        from airflow_provider_deltacc.observability.metrics import record_gate

        waited = (datetime.now(UTC) - self.waiting_since).total_seconds()
        operation = request.maintenance_op.name.lower()
        record_gate(self.task.table, operation, waited_s=waited, outcome=outcome)

    def remaining_s(self) -> float | None:
        """Seconds left to wait, or None without a limit."""
        if self.timeout_s is None:
            return None
        return self.timeout_s - (datetime.now(UTC) - self.waiting_since).total_seconds()

    def wait(self, request: GateRequest, decision: GateDecision) -> None:
        """Defer to the gate trigger, or sleep in the worker; fail once the wait's limit is spent."""
        from airflow_provider_deltacc.gate import poll_delay

        remaining = self.remaining_s()
        if remaining is not None and remaining <= 0:
            self._record_gate("timeout", request)
            raise AirflowException(
                f"{self.task.task_id}: gave up waiting for the gate on {self.task.table} after "
                f"{self.timeout_name}={_limit(self.timeout_s)}; last decision: {decision.reason}"
            )
        if self.task.deferrable:
            self.defer(request)
        delay = poll_delay(decision, self.poll_interval_s, datetime.now(UTC))
        if remaining is not None:
            delay = min(delay, max(remaining, 0.0))
        time.sleep(delay)

    def defer(self, request: GateRequest) -> NoReturn:
        """Hand the wait to :class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger`, for what is
        left of the limit; the task resumes in ``execute_complete`` with ``waiting_since``."""
        from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger

        remaining = self.remaining_s()
        self.task.defer(
            trigger=DeltaGateTrigger(
                request=request.to_dict(),
                poll_interval=self.poll_interval_s,
                **self.task.lease_store().trigger_kwargs(),
            ),
            method_name=RESUME_METHOD,
            kwargs={"waiting_since": self.waiting_since.isoformat()},
            timeout=timedelta(seconds=max(remaining, 0.0)) if remaining is not None else None,
        )

    def resume(self, event: dict[str, Any] | None) -> dict[str, Any]:
        """The gate's decision (a dict) from the trigger's event when it says go; else raise as the event
        says: a refusal or a bad connection is bad input, an unreachable store is infrastructure."""
        payload = event or {}
        status = payload.get("status")
        decision = payload.get("decision") or {}
        task_id, table = self.task.task_id, self.task.table
        if status == "go":
            self.task.log.info("gate trigger on %s: %s", table, decision.get("reason", "go"))
            return dict(decision)
        if status == "refused":
            raise DeltaCCInputError(
                f"{task_id}: {decision.get('reason', 'the gate refused')}", field="retention_hours"
            )
        message = payload.get("message") or decision.get("reason") or "no event"
        if payload.get("field"):  # bad input the triggerer met (the lease store's connection)
            raise DeltaCCInputError(f"{task_id}: {message}", field=payload["field"])
        if store := payload.get("lease_store"):
            raise DeltaCCInfrastructureError.lease_store(task_id, store, str(message))
        raise AirflowException(f"{task_id}: waiting for the gate on {table} failed: {message}")


def _limit(seconds: float | None) -> str:
    """A limit as the user wrote it, roughly: ``0.3``, ``600``."""
    return "none" if seconds is None else f"{seconds:g}"
