"""Write windows, turns and the maintenance gate: keep OPTIMIZE and VACUUM out of conflicting writes.

- :class:`WriteWindow`: declared windows (cron + duration, or explicit times) per table.
- :func:`decide_gate`: the gate; :class:`GateRequest`: a maintenance run's question to the gate as plain data
  (operators, triggers, sensors).
- :func:`writer_lease`, :func:`writer_op_kind`, :func:`writer_partitions`: the lease a writer operator holds.
- :func:`guarded_write`: everything a writer does around its job (storage guard, lease, heartbeat, turns).

The leases themselves and their store are in :mod:`airflow_provider_deltacc.leases`.

Imports the standard library, croniter, the job contract, the conflict matrix, the leases, the commit loop's
turns (``occ``) and the Delta log's reads (``deltalake`` lazily); never the engine, the Spark job, the hooks,
the operators or the deployment settings (``tests/unit/test_import_rules.py``): it runs in operators,
triggers and the triggerer alike.
"""

from __future__ import annotations

from airflow_provider_deltacc.windows.admission import TurnQueue
from airflow_provider_deltacc.windows.guarded import GuardedWrite, WriteGuard, guard_storage, guarded_write
from airflow_provider_deltacc.windows.writer import (
    exclusive_writer_lease,
    writer_lease,
    writer_op_kind,
    writer_partitions,
)

__all__ = [
    "GuardedWrite",
    "TurnQueue",
    "WriteGuard",
    "exclusive_writer_lease",
    "guard_storage",
    "guarded_write",
    "writer_lease",
    "writer_op_kind",
    "writer_partitions",
]
