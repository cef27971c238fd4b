"""The lease store interface: atomic acquisition, heartbeats, release, and the record of past leases."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Self

from airflow_provider_deltacc.leases.lease import Lease, LeaseRequest

#: Given an active lease on the same table, True if it must keep the request from being granted.
ConflictPredicate = Callable[[Lease], bool]


@dataclass(frozen=True)
class AcquireResult:
    """The outcome of :meth:`LeaseStore.try_acquire`.

    :param lease: the granted lease, or None when something blocked it.
    :param blocking: the active leases the conflict predicate matched (empty when granted).
    """

    lease: Lease | None
    blocking: list[Lease] = field(default_factory=list)

    @property
    def acquired(self) -> bool:
        """Whether the lease was granted."""
        return self.lease is not None


class LeaseStore(abc.ABC):
    """Where leases live. Implementations must make :meth:`try_acquire` atomic per table.

    Reading the table's active leases, applying the conflict predicate and inserting the new lease happen
    in one serialized step, so two maintenance runs cannot both win and a writer and a maintenance run
    that race are ordered. Heartbeats and releases are serialized with acquisitions on the same table,
    so a lease another acquirer has seen expire cannot be revived by a late heartbeat.
    """

    @abc.abstractmethod
    def try_acquire(self, request: LeaseRequest, conflicts: ConflictPredicate) -> AcquireResult:
        """Grant ``request`` unless an active lease on its table matches ``conflicts``; never waits.

        :param request: what to lease.
        :param conflicts: called with each active lease on the table inside the serialized step; keep it
            pure and fast (no I/O).
        """

    @abc.abstractmethod
    def heartbeat(self, lease_id: str) -> bool:
        """Extend a lease by its TTL from now.

        :param lease_id: the lease to renew.
        :returns: False if the lease is unknown, released or already expired (it cannot be revived).
        """

    @abc.abstractmethod
    def release(self, lease_id: str) -> bool:
        """End a lease now; it stays on record with ``released_at`` set.

        :param lease_id: the lease to release.
        :returns: True if the lease was active until this call.
        """

    @abc.abstractmethod
    def active(self, table: str, now: datetime | None = None) -> list[Lease]:
        """The leases on ``table`` that are neither released nor expired at ``now``, oldest first.

        :param table: the table's name or path, in any spelling (leases are kept by the table's key).
        :param now: the time to judge expiry at; None for the store's clock.
        """

    @abc.abstractmethod
    def history(self, table: str) -> list[Lease]:
        """Every lease ever recorded on ``table`` (active, released and expired), oldest first.

        :param table: the table's name or path, in any spelling (leases are kept by the table's key).
        """

    @abc.abstractmethod
    def get(self, lease_id: str) -> Lease | None:
        """One lease by id, active or not, or None if unknown.

        :param lease_id: the lease id.
        """

    @abc.abstractmethod
    def purge(self, older_than: timedelta) -> int:
        """Delete records of leases that ended more than ``older_than`` ago; returns how many.

        :param older_than: how long ended leases are kept for audits.
        """

    @abc.abstractmethod
    def now(self) -> datetime:
        """The store's clock (UTC); judge lease expiry with it."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
