"""A write guarded on its table: the storage guard, the writer's lease and its heartbeat, its turn.

:func:`guarded_write` is everything a writer does around its job, in order:

1. **Storage.** On storage that cannot exclude concurrent writers (see
   :mod:`airflow_provider_deltacc.contract.storage_safety`) the spec is marked ``storage_guard`` and the
   writer must be alone on the table (:func:`guard_storage`).
2. **The log.** A write the table's Delta log already answers (a committed duplicate) takes no lease; any
   other write is told what the log showed (its txn identity unrecorded), so its job need not read it again.
3. **The lease.** An exclusive lease on unsafe storage (or :class:`ExclusiveLeaseUnavailable`), checked
   before each commit (:class:`~airflow_provider_deltacc.leases.fence.LeaseFence`: a lapsed one abandons the
   attempt), else the
   writer's lease (:func:`~airflow_provider_deltacc.turns.writer.writer_lease`: bounded wait for
   conflicting maintenance, heartbeat, release, never fails the write) and the writer's turns among the
   table's writers (:class:`~airflow_provider_deltacc.turns.lease_turns.LeaseTurns`).

Airflow-free: the caller gives callables to open the store, ask the log and run the job, and its logger.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from airflow_provider_deltacc.contract.exceptions import UnguardedUnsafeWrite
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.contract.storage_safety import StorageSafety
from airflow_provider_deltacc.leases.fence import LeaseFence
from airflow_provider_deltacc.leases.lease import LeaseRequest
from airflow_provider_deltacc.leases.store import LeaseStore
from airflow_provider_deltacc.turns.lease_turns import LeaseTurns
from airflow_provider_deltacc.turns.writer import (
    exclusive_writer_lease,
    writer_lease,
    writer_op_kind,
    writer_partitions,
)

if TYPE_CHECKING:
    from airflow_provider_deltacc.delta_log.fast_path import LogAnswer

log = logging.getLogger(__name__)

#: How long a driver's request to a service that only guards the lease (no turns) may wait: it never waits.
FENCE_ONLY_TIMEOUT_S = 30.0

#: Runs the job: ``run(spec, turns=...)`` returns its report (the task's hook, without asking the log).
RunJob = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class WriteGuard:
    """How one writer guards its write.

    :param holder: the lease holder (``dag.task[map]/run``).
    :param ttl_s: seconds a lease outlives its last heartbeat.
    :param use_write_lease: hold a write lease (False: none, and refused on unsafe storage).
    :param allow_unsafe: run on unsafe storage without an exclusive lease (the explicit override).
    :param maintenance_wait_timeout_s: the longest wait for a conflicting maintenance lease.
    :param unsafe_storage_wait_timeout_s: the longest wait for the table to be free, on unsafe storage.
    :param turn_wait_timeout_s: the longest wait for the writer's turn; 0: no turns.
    """

    holder: str
    ttl_s: float
    use_write_lease: bool = True
    allow_unsafe: bool = False
    maintenance_wait_timeout_s: float = 120.0
    unsafe_storage_wait_timeout_s: float = 300.0
    turn_wait_timeout_s: float = 0.0


@dataclass
class GuardedWrite:
    """What :func:`guarded_write` yields: the spec to run, and the writer's turns when it has some.

    :param spec: the job spec, marked with its ``storage_guard`` on unsafe storage.
    :param answered: the report when the Delta log answered the write (nothing runs).
    :param turns: the writer's place among the writers of its table, or None.
    :param fence: the check of the lease that keeps this write safe (the exclusive lease on storage that
        cannot exclude concurrent writers), or None where safety does not depend on the lease.
    """

    spec: JobSpec
    answered: dict[str, Any] | None = None
    turns: LeaseTurns | None = None
    fence: LeaseFence | None = None

    def run(
        self, run_job: RunJob, *, loop_takes_turns: bool, serve_turns_to_job: bool = False
    ) -> dict[str, Any]:
        """Run the job (unless the log answered) and return its report.

        :param run_job: runs the job: ``run_job(spec, turns=...)``.
        :param loop_takes_turns: the commit loop runs in this process and takes its turns itself; else the
            first turn is taken here, before the job starts, and its wait is reported as
            ``first_turn_wait_s`` (also on the report of an error that carries one).
        :param serve_turns_to_job: the commit loop runs in a Spark driver that can reach this process: its
            later turns (after a lost conflict) are served to it for the length of the job
            (:func:`~airflow_provider_deltacc.turns.service.serve_turns`), so it waits for the
            writers ahead instead of backing off blindly.
        """
        if self.answered is not None:
            return self.answered
        if self.fence is not None:
            self.fence.check()  # before any Spark starts; a loop in this process checks before each commit
            fence = LeaseFence(self.fence.held, self.turns)
            if loop_takes_turns:
                return run_job(self.spec, turns=fence)
            if serve_turns_to_job:  # a driver that reaches this process checks through it
                from airflow_provider_deltacc.turns.service import serve_turns

                timeout_s = self.turns.timeout_s if self.turns is not None else FENCE_ONLY_TIMEOUT_S
                with serve_turns(fence, timeout_s=timeout_s, fenced=True) as service:
                    return run_job(replace(self.spec, turn_service=service), turns=None)
        if self.turns is None or loop_takes_turns:
            return run_job(self.spec, turns=self.turns)
        waited = self.turns.first() or 0.0
        try:
            if serve_turns_to_job:
                from airflow_provider_deltacc.turns.service import serve_turns

                with serve_turns(self.turns, timeout_s=self.turns.timeout_s) as service:
                    report = run_job(replace(self.spec, turn_service=service), turns=None)
            else:
                report = run_job(self.spec, turns=None)
        except Exception as exc:
            failed = getattr(exc, "report", None)
            if isinstance(failed, dict):
                failed["first_turn_wait_s"] = waited
            raise
        report["first_turn_wait_s"] = waited
        return report


def guard_storage(
    job: JobSpec, verdict: StorageSafety, *, allow_unsafe: bool, needs_lease: bool = True, logger: Any = None
) -> tuple[JobSpec, bool]:
    """Mark the spec with how unsafe storage is guarded; True when this run must be alone on the table.

    Safe storage changes nothing. On unsafe storage the spec carries ``storage_guard`` (the Spark job refuses
    such a table without it): ``override`` when concurrent writes are explicitly allowed, else
    ``exclusive_lease``, and the caller must hold a lease no other lease on the table overlaps.

    :param job: the job spec.
    :param verdict: the table's storage safety.
    :param allow_unsafe: the explicit override (``allow_unsafe_concurrent_writes``).
    :param needs_lease: False for a writer that takes no lease (``use_write_lease=False``).
    :param logger: the task's logger; this module's by default.
    :raises UnguardedUnsafeWrite: unsafe storage, no override and no lease.
    """
    out = logger if logger is not None else log
    if verdict.safe:
        return job, False
    if allow_unsafe:
        out.warning("%s; running anyway: allow_unsafe_concurrent_writes is set", verdict.message())
        return replace(job, storage_guard="override"), False
    if not needs_lease:
        raise UnguardedUnsafeWrite(
            f"use_write_lease=False, but {verdict.message()}. Without a lease this task cannot make sure it "
            "is the only writer; keep use_write_lease=True"
        )
    out.info("%s; holding an exclusive lease on the table while writing", verdict.message())
    return replace(job, storage_guard="exclusive_lease"), True


@contextmanager
def guarded_write(
    spec: JobSpec,
    guard: WriteGuard,
    *,
    verdict: StorageSafety,
    open_store: Callable[[], LeaseStore],
    consult_log: Callable[[JobSpec], LogAnswer] | None = None,
    logger: Any = None,
) -> Iterator[GuardedWrite]:
    """Guard a write on its table for the duration of the block (see the module docstring).

    :param spec: the writer's job spec.
    :param guard: the writer's settings.
    :param verdict: the table's storage safety, as the task sees it.
    :param open_store: opens the lease store (called at most once).
    :param consult_log: what the table's Delta log tells about the write before any Spark starts (see
        :func:`airflow_provider_deltacc.delta_log.fast_path.consult_log`): the report when it answers the
        write, else the spec to run; asked after the storage guard and before any lease.
    :param logger: the task's logger; this module's by default.
    :raises UnguardedUnsafeWrite: see :func:`guard_storage`.
    :raises ExclusiveLeaseUnavailable: unsafe storage, and the table did not become free in time.
    """
    out = logger if logger is not None else log
    job, exclusive = guard_storage(
        spec, verdict, allow_unsafe=guard.allow_unsafe, needs_lease=guard.use_write_lease, logger=out
    )
    answer = consult_log(job) if consult_log is not None else None
    if answer is not None:
        if answer.report is not None:
            yield GuardedWrite(job, answered=answer.report)
            return
        job = answer.spec_to_run(job)
    if exclusive:
        request = _request(job, guard, partitions=False)
        with exclusive_writer_lease(
            open_store, request, wait_timeout_s=guard.unsafe_storage_wait_timeout_s
        ) as held:
            yield GuardedWrite(job, fence=LeaseFence(held))
    elif not guard.use_write_lease:
        yield GuardedWrite(job)
    else:
        yield from _leased(job, guard, open_store, out)


def _leased(
    spec: JobSpec, guard: WriteGuard, open_store: Callable[[], LeaseStore], out: Any
) -> Iterator[GuardedWrite]:
    """The writer's lease and turns; a write that cannot be described as a lease runs without one."""
    try:
        request = _request(spec, guard, partitions=True)
    except Exception as exc:
        out.warning(
            "cannot describe this write as a lease (%s: %s); writing %s without a lease",
            type(exc).__name__,
            exc,
            spec.table,
        )
        yield GuardedWrite(spec)
        return
    with writer_lease(
        open_store, request, wait_timeout_s=guard.maintenance_wait_timeout_s, logger=out
    ) as held:
        turn_timeout_s = guard.turn_wait_timeout_s
        if held is None or held.lease is None or held.store is None or turn_timeout_s <= 0:
            yield GuardedWrite(spec)
        else:
            yield GuardedWrite(
                spec, turns=LeaseTurns(held.store, held.lease, timeout_s=turn_timeout_s, logger=out)
            )


def _request(spec: JobSpec, guard: WriteGuard, *, partitions: bool) -> LeaseRequest:
    """The writer's lease: kind from the spec, partitions when known (an exclusive lease takes the table)."""
    return LeaseRequest(
        table=spec.table.name,
        holder=guard.holder,
        op_kind=writer_op_kind(spec),
        partitions=writer_partitions(spec) if partitions else None,
        ttl_s=guard.ttl_s,
    )
