"""DeltaWriteWindowSensor: wait for a quiet window on a Delta table for a maintenance operation."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.exceptions import AirflowException

from airflow_provider_deltacc.config import default_deferrable
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.hooks.lease_store import UsesLeaseStore
from airflow_provider_deltacc.operators.base import DEFAULT_AIRFLOW_RETRIES, DEFAULT_RETRY_POLICY

if TYPE_CHECKING:
    from airflow.sdk import Context, RetryPolicy

    from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
    from airflow_provider_deltacc.windows import GateRequest, WriteWindow


class DeltaWriteWindowSensor(UsesLeaseStore, BaseSensorOperator):
    """Wait until the maintenance gate would let ``maintenance_op`` run on a table now.

    "Quiet" means what the gate means: no declared write window and no live write lease that can conflict
    with the operation, per the conflict matrix and the partitions (OPTIMIZE does not wait for blind
    appends; VACUUM waits for every writer). The sensor takes no lease: an operator that must not overlap
    writers (:class:`~airflow_provider_deltacc.operators.maintenance.DeltaOptimizeOperator`,
    :class:`~airflow_provider_deltacc.operators.maintenance.DeltaVacuumOperator`) still asks the gate and
    takes its lease itself. Returns the gate's decision as a dict (XCom), with ``closed_partitions``.

    Deferrable (``[deltacc] default_deferrable``, else ``[operators] default_deferrable``): the wait runs in
    the triggerer (:class:`~airflow_provider_deltacc.triggers.gate.DeltaGateTrigger`), no worker slot held.
    With ``deferrable=False`` it falls back to ``reschedule`` mode.

    Like writers and maintenance it refuses, at its start, a SQLite lease store where tasks may run on other
    machines (its answer would only cover this machine's writers); see
    :mod:`airflow_provider_deltacc.hooks.lease_store`.

    :param table: the table's name or path, as the writers' leases spell it. (templated)
    :param maintenance_op: ``optimize``, ``optimize_zorder`` or ``vacuum``.
    :param partitions: for OPTIMIZE, wait until all of these partitions are quiet; None for the whole
        table. (templated)
    :param write_windows: declared write windows (objects or dicts).
    :param profile: the engine profile the writers commit with.
    :param table_traits: the table's traits; None reads them from the log when the table is a path.
    :param lease_store_url: the older way to name the lease store, when no ``lease_store_conn_id`` is set;
        None reads ``$DELTACC_LEASE_STORE_URL``, else the embedded SQLite file.
    :param expected_duration: the maintenance's expected duration (seconds or a timedelta): a window that
        opens within it counts as busy.
    :param storage_options: delta-rs storage options.
    :param deferrable: wait in the triggerer instead of rescheduling on a worker; the default is
        ``[deltacc] default_deferrable``, else ``[operators] default_deferrable`` (False).
    :param poll_interval: the longest pause between two gate decisions, in seconds.
    :param lease_store_conn_id: the lease store's ``postgres`` or ``sqlite`` connection; None reads
        ``[deltacc] lease_store_conn_id``, then ``lease_store_url``.
    :param retries: Airflow retries, as for the Delta operators: a lease store that cannot be reached fails
        the try as :class:`~airflow_provider_deltacc.exceptions.DeltaCCInfrastructureError`, which the retry
        policy retries with the task's own ``retry_delay``.
    :param retry_policy: the Airflow retry policy; the Delta operators' ``DeltaConflictRetryPolicy`` by
        default.
    """

    template_fields: Sequence[str] = ("table", "partitions")
    ui_color = "#e6f1f2"

    def __init__(
        self,
        *,
        table: str,
        maintenance_op: str = "optimize",
        partitions: list[dict[str, Any]] | None = None,
        write_windows: list[WriteWindow | dict[str, Any]] | None = None,
        profile: EngineProfile | str = "oss_serializable",
        table_traits: TableTraits | dict[str, Any] | None = None,
        lease_store_url: str | None = None,
        expected_duration: float | timedelta | None = None,
        storage_options: dict[str, str] | None = None,
        deferrable: bool = default_deferrable(),
        poll_interval: float = 30.0,
        lease_store_conn_id: str | None = None,
        retries: int | None = DEFAULT_AIRFLOW_RETRIES,
        retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
        **kwargs: Any,
    ) -> None:
        if not deferrable:
            kwargs.setdefault("mode", "reschedule")
        kwargs.setdefault("poke_interval", poll_interval)
        super().__init__(retries=retries, retry_policy=retry_policy, **kwargs)
        self.table = table
        self.maintenance_op = maintenance_op
        self.partitions = partitions
        self.write_windows = write_windows
        self.profile = profile
        self.table_traits = table_traits
        self.lease_store_url = lease_store_url
        self.expected_duration = expected_duration
        self.storage_options = storage_options
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.lease_store_conn_id = lease_store_conn_id

    def _request(self) -> GateRequest:
        from airflow_provider_deltacc.windows import GateRequest, read_table_facts
        from airflow_provider_deltacc.windows.request import parse_traits
        from airflow_provider_deltacc.windows.writer import canonical_scope

        try:
            facts = read_table_facts(self.table, self.storage_options)
        except Exception as exc:
            self.log.warning("cannot read %s with delta-rs (%s: %s)", self.table, type(exc).__name__, exc)
            facts = None
        try:
            traits = parse_traits(self.table_traits)
            if traits is None and facts is not None:
                traits = facts.traits()
            expected = self.expected_duration
            return GateRequest(
                table=self.table,
                maintenance_op=self.maintenance_op,  # type: ignore[arg-type]
                windows=self.write_windows or (),  # type: ignore[arg-type]
                profile=self.profile,  # type: ignore[arg-type]
                traits=traits,
                partitions=canonical_scope(self.partitions, facts) if self.partitions else None,
                require_all_partitions=True,
                expected_duration_s=(
                    expected.total_seconds() if isinstance(expected, timedelta) else expected
                ),
            )
        except ValueError as exc:
            raise DeltaCCInputError(f"{self.task_id}: {exc}") from None

    def _decide(self) -> dict[str, Any]:
        from airflow_provider_deltacc.windows import LeaseStoreUnavailable

        request = self._request()
        try:
            with self.open_lease_store() as store:
                decision = request.decide(store)
        except LeaseStoreUnavailable as exc:
            raise DeltaCCInfrastructureError.lease_store(self.task_id, exc.store, str(exc)) from None
        self.log.info("gate: %s on %s: %s", request.maintenance_op.name, self.table, decision.reason)
        return decision.to_dict()

    def poke(self, context: Context) -> PokeReturnValue:
        decision = self._decide()
        return PokeReturnValue(is_done=bool(decision["go"]), xcom_value=decision)

    def execute(self, context: Context) -> Any:
        self.log.info("lease store: %s", self.resolve_lease_store().describe())
        if not self.deferrable:
            return super().execute(context)
        decision = self._decide()
        if decision["go"]:
            return decision
        from airflow_provider_deltacc.triggers.gate import DeltaGateTrigger

        self.defer(
            trigger=DeltaGateTrigger(
                request=self._request().to_dict(),
                poll_interval=float(self.poll_interval),
                **self.lease_store().trigger_kwargs(),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout) if self.timeout else None,
        )

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> Any:
        if not event or event.get("status") != "go":
            message = (event or {}).get("message") or ((event or {}).get("decision") or {}).get("reason")
            if (event or {}).get("field"):  # bad input the triggerer met (the lease store's connection)
                raise DeltaCCInputError(f"{self.task_id}: {message}", field=(event or {})["field"])
            if store := (event or {}).get("lease_store"):
                raise DeltaCCInfrastructureError.lease_store(self.task_id, store, str(message))
            raise AirflowException(
                f"waiting for a quiet window on {self.table} failed: {message or 'no event'}"
            )
        decision = event["decision"]
        self.log.info("quiet window on %s: %s", self.table, decision.get("reason"))
        return decision
