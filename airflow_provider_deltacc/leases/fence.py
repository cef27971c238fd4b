"""A lease that keeps the data safe stops its writer when it lapses: checked before each commit.

Where the lease is what keeps two writers apart (the serializing guard on S3 without conditional writes), a
lease that lapsed (the store did not renew it for a whole TTL, or a heartbeat found it expired) may already
have let the next writer in. :class:`LeaseFence` is the check: the commit loop asks it before every attempt
and, for operations with a source, once more after the source is built, right before the write that commits
(:func:`~airflow_provider_deltacc.engine.run.run_operation`); a lapsed lease raises
:class:`~airflow_provider_deltacc.contract.exceptions.LeaseLapsedError`, which the job reports as an
infrastructure failure (Airflow retries it) and nothing is committed by that attempt.

It rides with the writer's turns (it is a :class:`~airflow_provider_deltacc.occ.commit_loop.Turns`, wrapping
the writer's own turns, if any), so it reaches the commit loop wherever the loop runs in the worker's process
(``in_process``, ``spark_connect``). A spark-submit driver cannot reach the lease store: a client-mode driver
asks the worker, which serves the fence with the writer's turns
(:mod:`~airflow_provider_deltacc.turns.service`, ``fenced``), before each attempt and right before
its write commits; a cluster-mode driver, which cannot reach the worker, is checked before it starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_deltacc.contract.exceptions import LeaseLapsedError

if TYPE_CHECKING:
    from airflow_provider_deltacc.leases.heartbeat import HeldLease
    from airflow_provider_deltacc.occ.commit_loop import Turns


class LeaseFence:
    """The check of one held lease, before each commit, around the writer's own turns.

    :param held: the lease, as :func:`~airflow_provider_deltacc.leases.heartbeat.hold_lease` holds it.
    :param turns: the writer's turns, or None.
    """

    def __init__(self, held: HeldLease, turns: Turns | None = None) -> None:
        self.held = held
        self.turns = turns

    def check(self) -> None:
        """Raise :class:`LeaseLapsedError` when the lease lapsed."""
        why = self.held.lapsed()
        lease = self.held.lease
        if why is None or lease is None:
            return
        raise LeaseLapsedError(lease.table, f"{lease.describe()} (id {lease.lease_id})", lease.ttl_s, why)

    def first(self) -> float | None:
        """Check the lease, then take the writer's first turn (if it has turns)."""
        self.check()
        return self.turns.first() if self.turns is not None else None

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        """Check the lease, then take the writer's next turn (if it has turns)."""
        self.check()
        return self.turns.retry(conflict_kind, attempt) if self.turns is not None else None

    def before_commit(self) -> None:
        """Check the lease right before the write that commits."""
        self.check()
