"""Hold a lease for the length of a ``with`` block: bounded wait, background heartbeat, release on exit."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from airflow_provider_deltacc.leases.lease import Lease, LeaseRequest
from airflow_provider_deltacc.leases.partitions import format_scope
from airflow_provider_deltacc.leases.store import ConflictPredicate, LeaseStore

#: Called with the store and the table right after a lease is granted and right after it is released, in the
#: context that holds the lease. Set by the operators for the length of a task (the live-leases metric);
#: unset elsewhere, so a library caller, a forked lease holder or a new thread runs nothing extra.
LEASE_OBSERVER: ContextVar[Callable[[LeaseStore, str], None] | None] = ContextVar(
    "deltacc_lease_observer", default=None
)

log = logging.getLogger(__name__)


@dataclass
class HeldLease:
    """What :func:`hold_lease` got.

    :param request: what was asked for.
    :param lease: the lease, or None when the bounded wait ran out.
    :param blocking: the leases that blocked the last attempt (empty once acquired).
    :param waited_s: how long acquisition took, or how long it waited before giving up.
    :param store: the store the lease lives in, while it is held (the writer's turns ask it).
    """

    request: LeaseRequest
    lease: Lease | None
    blocking: list[Lease] = field(default_factory=list)
    waited_s: float = 0.0
    store: LeaseStore | None = field(default=None, repr=False)
    _lost: threading.Event = field(default_factory=threading.Event, repr=False)
    #: When the store last renewed the lease (``time.monotonic()``, taken before the request was sent).
    renewed_at: float = field(default_factory=time.monotonic, repr=False)

    @property
    def acquired(self) -> bool:
        """Whether the lease was granted (False: the wait timed out and the body runs without it)."""
        return self.lease is not None

    @property
    def lost(self) -> bool:
        """Whether a heartbeat found the lease already expired, so others may have stopped respecting it."""
        return self._lost.is_set()

    def lapsed(self, now: float | None = None) -> str | None:
        """Why the lease can no longer be trusted, or None while it holds: a heartbeat found it expired, or
        the store has not renewed it for a whole TTL (it does not answer, or this process was paused), so
        the store may have let others in.

        :param now: the ``time.monotonic()`` to judge at (now by default).
        """
        if self.lease is None:
            return None
        if self.lost:
            return "a heartbeat found it expired"
        silent = (time.monotonic() if now is None else now) - self.renewed_at
        if silent >= self.lease.ttl_s:
            return f"the lease store has not renewed it for {silent:.0f} s"
        return None


class _Heartbeat(threading.Thread):
    """Renews one lease every ``interval_s`` until stopped or the lease is found lost."""

    def __init__(self, store: LeaseStore, held: HeldLease, lease: Lease, interval_s: float) -> None:
        super().__init__(name=f"deltacc-lease-heartbeat-{lease.lease_id[:8]}", daemon=True)
        self._store = store
        self._held = held
        self._lease = lease
        self._interval_s = interval_s
        self._lost = held._lost
        self._stopped = threading.Event()
        #: True while the store does not answer (warned once per outage).
        self.failing = False

    def run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            sent = time.monotonic()
            try:
                renewed = self._store.heartbeat(self._lease.lease_id)
            except Exception as exc:
                # A store outage: keep trying; the TTL bounds how long this may last. One warning per outage.
                if not self.failing:
                    log.warning(
                        "heartbeat for %s on %s failed (%s: %s); the work goes on, the heartbeat retries "
                        "every %.0f s, and the lease ends at its TTL (%.0f s) unless the store answers again",
                        self._lease.describe(),
                        self._lease.table,
                        type(exc).__name__,
                        exc,
                        self._interval_s,
                        self._lease.ttl_s,
                    )
                    self.failing = True
                else:
                    log.debug("heartbeat for %s failed again (%s)", self._lease.describe(), exc)
                continue
            if renewed:
                self._held.renewed_at = sent
            if self.failing and renewed:
                log.info("heartbeat for %s on %s renewed again", self._lease.describe(), self._lease.table)
                self.failing = False
            if not renewed:
                self._lost.set()
                log.error(
                    "%s on %s expired before its heartbeat (TTL %.0f s); others no longer wait for it",
                    self._lease.describe(),
                    self._lease.table,
                    self._lease.ttl_s,
                )
                return

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=max(5.0, self._interval_s))


def _describe_blocking(blocking: list[Lease]) -> str:
    return "; ".join(lease.describe() for lease in blocking) or "nothing"


@contextmanager
def hold_lease(
    store: LeaseStore,
    request: LeaseRequest,
    *,
    conflicts: ConflictPredicate,
    wait_timeout_s: float,
    poll_s: float = 1.0,
    heartbeat_s: float | None = None,
) -> Iterator[HeldLease]:
    """Acquire a lease (waiting at most ``wait_timeout_s``), keep it alive while the block runs, release it.

    When the wait runs out the block still runs, with ``held.acquired`` False and ``held.blocking`` naming
    what blocked it: writers typically proceed with a warning, maintenance goes back to the gate.

    :param store: the lease store.
    :param request: the lease to hold.
    :param conflicts: which active leases block it (see :mod:`airflow_provider_deltacc.leases.conflicts`).
    :param wait_timeout_s: the longest wait for acquisition; 0 tries once.
    :param poll_s: the pause between acquisition attempts.
    :param heartbeat_s: the renewal interval; None for a third of the TTL. Must be shorter than the TTL.
    :raises ValueError: for inconsistent timings.
    :raises sqlalchemy.exc.SQLAlchemyError: when the store cannot be reached while acquiring; the caller
        decides whether to go on without a lease (a writer) or not (maintenance).
    """
    interval = heartbeat_s if heartbeat_s is not None else request.ttl_s / 3
    if not 0 < interval < request.ttl_s:
        raise ValueError(
            f"heartbeat_s={heartbeat_s!r} must be positive and shorter than ttl_s={request.ttl_s}, "
            "e.g. a third of it, or the lease expires between heartbeats"
        )
    if wait_timeout_s < 0 or poll_s <= 0:
        raise ValueError(
            f"wait_timeout_s={wait_timeout_s!r} must be >= 0 and poll_s={poll_s!r} > 0, e.g. 300 and 1"
        )
    started = time.monotonic()
    logged_wait = False
    while True:
        acquiring = time.monotonic()
        result = store.try_acquire(request, conflicts)
        waited = time.monotonic() - started
        if result.lease is not None:
            break
        remaining = wait_timeout_s - waited
        if remaining <= 0:
            log.warning(
                "gave up waiting for a %s lease on %s (%s) after %.1f s; blocked by %s",
                request.op_kind.name,
                request.table,
                format_scope(request.partitions),
                waited,
                _describe_blocking(result.blocking),
            )
            yield HeldLease(request, None, list(result.blocking), waited)
            return
        if not logged_wait:
            log.info(
                "waiting up to %.0f s for a %s lease on %s; blocked by %s",
                wait_timeout_s,
                request.op_kind.name,
                request.table,
                _describe_blocking(result.blocking),
            )
            logged_wait = True
        time.sleep(min(poll_s, remaining))

    held = HeldLease(request, result.lease, [], waited, store, renewed_at=acquiring)
    lease = result.lease
    log.info("holding %s on %s (id %s, waited %.1f s)", lease.describe(), lease.table, lease.lease_id, waited)
    beat = _Heartbeat(store, held, lease, interval)
    beat.start()
    _observe(store, lease.table)  # after the heartbeat starts: an observer must not delay it
    try:
        yield held
    finally:
        beat.stop()
        try:
            store.release(lease.lease_id)
        except Exception as exc:
            # Do not mask the body's own exception; the TTL ends the lease anyway. An outage the heartbeat
            # already warned about is not warned about twice.
            (log.info if beat.failing else log.warning)(
                "could not release %s on %s (%s: %s); it ends at its TTL",
                lease.describe(),
                lease.table,
                type(exc).__name__,
                exc,
            )
        else:
            log.info("released %s on %s", lease.describe(), lease.table)
            _observe(store, lease.table)


def _observe(store: LeaseStore, table: str) -> None:
    """Tell the thread's lease observer (see :data:`LEASE_OBSERVER`) that a lease on ``table`` changed; an
    observer that fails only costs its own work."""
    observer = LEASE_OBSERVER.get()
    if observer is None:
        return
    try:
        observer(store, table)
    except Exception as exc:
        log.debug("the lease observer failed for %s: %s", table, exc)
