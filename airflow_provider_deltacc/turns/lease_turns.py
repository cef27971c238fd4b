"""Conflict-aware turns: writers that would surely fail each other take turns instead of racing.

Optimistic concurrency lets every writer run and fails the losers, who redo their whole read-modify-write.
When the conflict matrix says two writers of a table *will* conflict (two unpinned MERGEs, say: each reads
every file the other writes), racing them only burns work. So writers take turns, in the order the lease
store granted their write leases (first come, first served):

* **Before the first attempt** a writer waits until every writer granted before it that it *will* conflict
  with has finished (released its lease, or died and let it expire). It has already validated its input and
  loaded its source meanwhile, so only the write itself is serialized. Writers that cannot conflict (pinned
  to other partitions, blind appends) never wait for each other.
* **After a lost conflict** (a pair the matrix says only *can* conflict ran side by side, or a writer
  outside Airflow won) it waits for the writers granted before it that it *can* conflict with, then retries
  at once: a writer wastes about one attempt.

Waiting only for writers granted earlier cannot deadlock. Every wait is bounded (``timeout_s``): past it the
writer goes ahead, and optimistic concurrency sorts the rest out. A store that cannot be asked means no
turns: the writer goes ahead and the commit loop backs off as before, with one warning.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from airflow_provider_deltacc.conflict_matrix import EngineProfile, Level, TableTraits
from airflow_provider_deltacc.leases.conflicts import writer_turn_conflicts
from airflow_provider_deltacc.leases.lease import Lease
from airflow_provider_deltacc.leases.store import LeaseStore

log = logging.getLogger(__name__)

#: The first pause between two looks at the table's leases; it grows to ``poll_s``. Short, so that a writer
#: follows the one ahead of it closely: each hand-over costs at most a pause.
FIRST_POLL_S = 0.05
#: The longest pause between two looks of the next writer in line; a writer further back pauses this long
#: for each writer ahead of it (its turn cannot come before they have all written), up to ``MAX_POLL_S``. So
#: a long queue does not ask the store K times as often: measured with 64 writers through one PostgreSQL
#: store, 535 store transactions a task with a fixed pause (bench/writers.py).
POLL_S = 0.25
#: The longest pause of any writer in line: how late it may notice that the writers ahead are gone.
MAX_POLL_S = 5.0

#: The matrix levels a writer waits for before its first attempt, and after a lost conflict.
FIRST_LEVELS = frozenset({Level.WILL})
RETRY_LEVELS = frozenset({Level.WILL, Level.CAN})


class LeaseTurns:
    """A writer's place among the writers of its table, by the order their leases were granted.

    Implements :class:`~airflow_provider_deltacc.occ.commit_loop.Turns` for the commit loop.

    :param store: the lease store the writer's lease lives in.
    :param lease: the writer's lease.
    :param timeout_s: the longest wait before one attempt.
    :param poll_s: the longest pause between two looks for each writer ahead (see :data:`POLL_S`).
    :param profile: the engine profile, for the conflict matrix.
    :param traits: the table's traits, for the conflict matrix.
    :param logger: where waits are logged (the task's logger); this module's by default.
    """

    def __init__(
        self,
        store: LeaseStore,
        lease: Lease,
        *,
        timeout_s: float,
        poll_s: float = POLL_S,
        profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
        traits: TableTraits | None = None,
        logger: Any = None,
    ) -> None:
        self.store = store
        self.lease = lease
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._conflicts = {
            levels: writer_turn_conflicts(
                lease.op_kind, lease.partitions, levels=levels, profile=profile, traits=traits
            )
            for levels in (FIRST_LEVELS, RETRY_LEVELS)
        }
        self._out = logger if logger is not None else log
        self._warned = False

    def ahead(self, levels: frozenset[Level] = FIRST_LEVELS) -> list[Lease]:
        """The live writer leases granted before this one whose pair with it is one of ``levels``.

        :param levels: matrix levels that count.
        """
        place = (self.lease.acquired_at, self.lease.lease_id)
        conflicts = self._conflicts[levels]
        return [
            lease
            for lease in self.store.active(self.lease.table)
            if (lease.acquired_at, lease.lease_id) < place and conflicts(lease)
        ]

    def first(self) -> float | None:
        """Wait for the writers ahead that this one will conflict with; the seconds waited (None: the store
        could not be asked)."""
        return self._wait(FIRST_LEVELS, "before its first attempt")

    def retry(self, conflict_kind: str, attempt: int) -> float | None:
        """After a lost conflict, wait for the writers ahead that this one can conflict with.

        :param conflict_kind: the conflict lost, for the log.
        :param attempt: the attempt that lost it.
        :returns: the seconds waited (0: nobody was ahead), or None when the store could not be asked.
        """
        return self._wait(RETRY_LEVELS, f"after a {conflict_kind} conflict on attempt {attempt}")

    def _wait(self, levels: frozenset[Level], when: str) -> float | None:
        started = time.monotonic()
        pause = FIRST_POLL_S
        logged = False
        try:
            while True:
                ahead = self.ahead(levels)
                waited = time.monotonic() - started
                if not ahead:
                    return waited if logged else 0.0
                names = "; ".join(lease.describe() for lease in ahead)
                if waited >= self.timeout_s:
                    self._out.warning(
                        "%s on %s goes ahead %s after %.0f s (turn_wait_timeout) although %s still run",
                        self.lease.op_kind.name,
                        self.lease.table,
                        when,
                        waited,
                        names,
                    )
                    return waited
                if not logged:
                    self._out.info(
                        "%s on %s waits %s for its turn behind %s",
                        self.lease.op_kind.name,
                        self.lease.table,
                        when,
                        names,
                    )
                    logged = True
                time.sleep(min(pause, self.timeout_s - waited))
                pause = min(pause * 1.5, self.poll_s * len(ahead), MAX_POLL_S)
        except Exception as exc:
            if not self._warned:
                self._warned = True
                self._out.warning(
                    "the lease store cannot be asked whose turn it is (%s: %s); going ahead, retrying with "
                    "backoff",
                    type(exc).__name__,
                    exc,
                )
            return None
