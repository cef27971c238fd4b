"""The base of every writer: exactly-once txn identity, and the write guarded on its table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.api_support.durations import seconds_argument
from airflow_provider_deltacc.exceptions import DeltaCCInputError, DeltaUnsafeStorageError
from airflow_provider_deltacc.operators.base import DeltaBaseOperator, lease_holder
from airflow_provider_deltacc.operators.identity import derive_txn_identity

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_deltacc.contract.spec import JobSpec
    from airflow_provider_deltacc.contract.txn import TxnIdentity
    from airflow_provider_deltacc.turns import WriteGuard

DEFAULT_TURN_WAIT_TIMEOUT = 1800.0


class DeltaWriteOperator(DeltaBaseOperator):
    """A Delta writer: exactly-once across Airflow tries, and guarded on its table while it writes.

    Around the job (see :func:`airflow_provider_deltacc.turns.guarded_write`) the writer marks unsafe
    storage, asks the table's Delta log first (a committed duplicate writes nothing, takes no lease and
    starts no Spark), holds a write lease (heartbeated, released also on failure; an unreachable store never
    fails the write), and takes its turn behind the writers it would surely conflict with.

    :param exactly_once: give the write a Delta txn identity so a retried try never writes twice.
    :param txn_identity: how the identity is derived: ``run`` or ``interval``; see
        :mod:`airflow_provider_deltacc.operators.identity`.
    :param txn_app_id: explicit txn app id, overriding the derived one. (templated)
    :param txn_version: explicit txn version, overriding the derived one. (templated)
    :param use_write_lease: hold a write lease on the table while the job runs, so the maintenance gate keeps
        OPTIMIZE and VACUUM away from it; False opts out (refused on storage that cannot exclude concurrent
        writers).
    :param maintenance_wait_timeout: seconds (or a timedelta) the writer waits for a conflicting maintenance
        lease before it writes anyway, with a warning.
    :param turn_wait_timeout: seconds (or a timedelta) the writer waits for its turn behind the writers
        on the table it would surely conflict with (the conflict matrix's *will*: an unpinned MERGE and any
        other write, say), first come first served, and after a lost conflict for the writers ahead
        of it that it can conflict with, before retrying. Writers that cannot conflict never wait for each
        other. Past it the writer goes ahead. 0 turns the turns off (writers race and the commit loop
        retries). Capped by ``execution_timeout``.
    :param unsafe_storage_wait_timeout: seconds (or a timedelta) a writer on storage that cannot exclude
        concurrent writers waits for the table to be free before it fails with ``DeltaUnsafeStorageError``.

    See :class:`~airflow_provider_deltacc.operators.base.DeltaBaseOperator` for the arguments every Delta
    operator takes.
    """

    template_fields: Sequence[str] = (*DeltaBaseOperator.template_fields, "txn_app_id", "txn_version")
    advisor_arguments = (*DeltaBaseOperator.advisor_arguments, "use_write_lease")
    renamed_arguments = {
        "admission_timeout": "turn_wait_timeout",
        "admission_wait_timeout": "turn_wait_timeout",
    }

    def __init__(
        self,
        *,
        exactly_once: bool = True,
        txn_identity: str = "run",
        txn_app_id: str | None = None,
        txn_version: int | str | None = None,
        use_write_lease: bool = True,
        maintenance_wait_timeout: float | timedelta = 120.0,
        turn_wait_timeout: float | timedelta = DEFAULT_TURN_WAIT_TIMEOUT,
        unsafe_storage_wait_timeout: float | timedelta = 300.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.exactly_once = exactly_once
        self.txn_identity = txn_identity
        self.txn_app_id = txn_app_id
        self.txn_version = txn_version
        self.use_write_lease = use_write_lease
        self.maintenance_wait_timeout = maintenance_wait_timeout
        self.turn_wait_timeout = turn_wait_timeout
        self.unsafe_storage_wait_timeout = unsafe_storage_wait_timeout

    def build_txn(self, context: Context) -> TxnIdentity | None:
        """The write's exactly-once identity (see :mod:`airflow_provider_deltacc.operators.identity`): derived
        from the run, or the explicit ``txn_app_id``/``txn_version``; None without ``exactly_once``."""
        if not self.exactly_once:
            return None
        from airflow_provider_deltacc.contract.spec_build import txn_identity

        app_id, version = derive_txn_identity(context, self.txn_identity)
        if self.txn_app_id:
            app_id = self.txn_app_id
        if self.txn_version not in (None, ""):
            try:
                version = int(self.txn_version)
            except (TypeError, ValueError):
                raise DeltaCCInputError(
                    f"txn_version={self.txn_version!r} is not an integer; give a non-negative integer "
                    "that grows with each new write of this app id",
                    field="txn_version",
                    value=self.txn_version,
                ) from None
        return txn_identity(app_id=app_id, version=version)

    def validate_arguments(self) -> None:
        super().validate_arguments()
        seconds_argument(self.maintenance_wait_timeout, "maintenance_wait_timeout")
        seconds_argument(self.turn_wait_timeout, "turn_wait_timeout")
        seconds_argument(self.unsafe_storage_wait_timeout, "unsafe_storage_wait_timeout")

    def check_lease_store(self) -> None:
        """Writers with ``use_write_lease=False`` need no lease store."""
        if self.use_write_lease:
            super().check_lease_store()

    def run_spec(self, context: Context, spec: JobSpec) -> dict[str, Any]:
        """Run the spec inside the write guarded on its table (see
        :func:`airflow_provider_deltacc.turns.guarded_write`)."""
        from airflow_provider_deltacc.contract.exceptions import (
            ExclusiveLeaseUnavailable,
            UnguardedUnsafeWrite,
        )
        from airflow_provider_deltacc.turns import guarded_write

        verdict = self.storage_safety()
        try:
            with guarded_write(
                spec,
                self.write_guard(context),
                verdict=verdict,
                open_store=self.open_lease_store,
                consult_log=self.hook.consult_log,
                logger=self.log,
            ) as write:
                run_job = partial(self.hook.run, consult_log=False)
                return write.run(
                    run_job,
                    loop_takes_turns=self.hook.loop_runs_here,
                    serve_turns_to_job=self.hook.driver_reaches_worker,
                )
        except UnguardedUnsafeWrite as exc:
            raise DeltaCCInputError(f"{self.task_id}: {exc}", field="use_write_lease", value=False) from None
        except ExclusiveLeaseUnavailable as exc:
            raise DeltaUnsafeStorageError(
                f"{self.task_id}: refusing to write {self.table} concurrently: {exc}. {verdict.message()}",
                report={"table": self.table, "status": "refused", "storage_safety": verdict.to_dict()},
            ) from None

    def write_guard(self, context: Context) -> WriteGuard:
        """This writer's guard: its lease holder and TTL, and how long it waits for what."""
        from airflow_provider_deltacc.turns import WriteGuard

        turn_timeout_s = seconds_argument(self.turn_wait_timeout, "turn_wait_timeout")
        if self.execution_timeout is not None:
            turn_timeout_s = min(turn_timeout_s, self.execution_timeout.total_seconds())
        return WriteGuard(
            holder=lease_holder(context),
            ttl_s=self.lease_ttl_s,
            use_write_lease=bool(self.use_write_lease),
            allow_unsafe=self.unsafe_writes_allowed(),
            maintenance_wait_timeout_s=seconds_argument(
                self.maintenance_wait_timeout, "maintenance_wait_timeout"
            ),
            unsafe_storage_wait_timeout_s=seconds_argument(
                self.unsafe_storage_wait_timeout, "unsafe_storage_wait_timeout"
            ),
            turn_wait_timeout_s=turn_timeout_s,
        )
