"""Write windows, leases and the maintenance gate: keep OPTIMIZE and VACUUM out of conflicting writes.

- :class:`WriteWindow`: declared windows (cron + duration, or explicit times) per table.
- :class:`LeaseStore` (:class:`SqliteLeaseStore`, :class:`PostgresLeaseStore`, :func:`store_from_url`):
  live leases writers and maintenance hold, acquired atomically, renewed by heartbeat, expiring by TTL;
  :func:`store_url_from_connection` builds a store's URL from an Airflow connection's fields.
  :class:`~airflow_provider_deltacc.contract.exceptions.LeaseStoreUnavailable` is raised when a store
  server cannot be reached.
- :func:`hold_lease`: hold a lease around a block of work.
- :func:`decide_gate`: the gate; :func:`maintenance_conflicts` and :func:`maintenance_lease_conflicts` are the
  predicates maintenance runs and writers acquire their leases with.
- :class:`GateRequest`: a maintenance run's question to the gate as plain data (operators, triggers, sensors).
- :func:`writer_lease`, :func:`writer_op_kind`, :func:`writer_partitions`: the lease a writer operator holds.
- :func:`guarded_write`: everything a writer does around its job (storage guard, lease, heartbeat, turns).
- :func:`read_table_facts`, :func:`table_partitions`: delta-rs reads of a table's layout and retention
  (``deltalake`` is imported on first use).

Imports the standard library, SQLAlchemy, croniter, the job contract, the conflict matrix, the commit loop's
turns (``occ``) and the Delta log's reads (``deltalake`` lazily); never the engine, the Spark job, the hooks,
the operators or the deployment settings (``tests/unit/test_import_rules.py``): it runs in operators,
triggers and the triggerer alike.
"""

from __future__ import annotations

from airflow_provider_deltacc.windows.admission import TurnQueue
from airflow_provider_deltacc.windows.conflicts import (
    Clash,
    clash,
    maintenance_conflicts,
    maintenance_lease_conflicts,
)
from airflow_provider_deltacc.windows.declared import WriteWindow, windows_for
from airflow_provider_deltacc.windows.factory import (
    LEASE_STORE_URL_ENV,
    STORE_CONN_TYPES,
    store_from_url,
    store_url_from_connection,
)
from airflow_provider_deltacc.windows.gate import DELTA_DEFAULT_RETENTION_HOURS, GateDecision, decide_gate
from airflow_provider_deltacc.windows.guarded import GuardedWrite, WriteGuard, guard_storage, guarded_write
from airflow_provider_deltacc.windows.heartbeat import HeldLease, hold_lease
from airflow_provider_deltacc.windows.lease import (
    DEFAULT_TTL_S,
    Lease,
    LeaseRequest,
    format_holder,
    parse_op_kind,
)
from airflow_provider_deltacc.windows.postgres_store import PostgresLeaseStore, mask_url
from airflow_provider_deltacc.windows.request import GateRequest, poll_delay, store_url_and_source
from airflow_provider_deltacc.windows.sqlite_store import LEASE_DB_ENV, SqliteLeaseStore, default_sqlite_path
from airflow_provider_deltacc.windows.store import AcquireResult, ConflictPredicate, LeaseStore
from airflow_provider_deltacc.windows.table_facts import TableFacts, read_table_facts, table_partitions
from airflow_provider_deltacc.windows.writer import (
    exclusive_writer_lease,
    writer_lease,
    writer_op_kind,
    writer_partitions,
)

__all__ = [
    "DEFAULT_TTL_S",
    "DELTA_DEFAULT_RETENTION_HOURS",
    "LEASE_DB_ENV",
    "LEASE_STORE_URL_ENV",
    "STORE_CONN_TYPES",
    "AcquireResult",
    "Clash",
    "ConflictPredicate",
    "GateDecision",
    "GateRequest",
    "GuardedWrite",
    "HeldLease",
    "Lease",
    "LeaseRequest",
    "LeaseStore",
    "PostgresLeaseStore",
    "RetryTurns",
    "SqliteLeaseStore",
    "TableFacts",
    "Turn",
    "TurnQueue",
    "WriteGuard",
    "WriteWindow",
    "await_turn",
    "clash",
    "decide_gate",
    "default_sqlite_path",
    "exclusive_writer_lease",
    "format_holder",
    "guard_storage",
    "guarded_write",
    "hold_lease",
    "maintenance_conflicts",
    "maintenance_lease_conflicts",
    "mask_url",
    "parse_op_kind",
    "poll_delay",
    "read_table_facts",
    "store_from_url",
    "store_url_and_source",
    "store_url_from_connection",
    "table_partitions",
    "windows_for",
    "writer_lease",
    "writer_op_kind",
    "writer_partitions",
]
