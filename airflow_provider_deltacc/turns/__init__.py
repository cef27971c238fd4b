"""A writer's way onto its table: its lease, its turn among the writers it would fail, and the guard around.

- :func:`writer_lease`, :func:`exclusive_writer_lease`, :func:`writer_op_kind`, :func:`writer_partitions`:
  what a writer's job spec means as a lease, held without ever failing the write.
- :class:`LeaseTurns`: writers that would surely fail each other take turns, in the order the lease store
  granted their leases, instead of racing.
- :mod:`.service`: a writer's turns served over HTTP to its spark-submit driver, which cannot reach the store.
- :func:`guarded_write` (:class:`WriteGuard`, :class:`GuardedWrite`, :func:`guard_storage`): everything a
  writer does around its job, in order: storage guard, the log's answer, lease, heartbeat, fence, turns.

Imports the standard library, the job contract, the conflict matrix, the leases (``leases/``), the commit
loop's turns (``occ``) and the Delta log's reads (``delta_log/``); never the gate, the engine, the Spark job,
the hooks, the operators or the deployment settings (``tests/unit/test_import_rules.py``): it runs in the
writer operators' worker process.
"""

from __future__ import annotations

from airflow_provider_deltacc.turns.guarded import GuardedWrite, WriteGuard, guard_storage, guarded_write
from airflow_provider_deltacc.turns.lease_turns import LeaseTurns
from airflow_provider_deltacc.turns.writer import (
    exclusive_writer_lease,
    writer_lease,
    writer_op_kind,
    writer_partitions,
)

__all__ = [
    "GuardedWrite",
    "LeaseTurns",
    "WriteGuard",
    "exclusive_writer_lease",
    "guard_storage",
    "guarded_write",
    "writer_lease",
    "writer_op_kind",
    "writer_partitions",
]
