"""Leases: who works on which table (and partitions), since when, until when, in a store every worker shares.

- :class:`Lease`, :class:`LeaseRequest`: a held lease and the request for one; partition scopes in
  :mod:`.partitions`, the injectable clock in :mod:`.clock`.
- :class:`LeaseStore` (:class:`SqliteLeaseStore`, :class:`PostgresLeaseStore`, :func:`store_from_url`):
  leases acquired atomically, renewed by heartbeat, expiring by TTL, and the record of past ones;
  :func:`store_url_from_connection` builds a store's URL from an Airflow connection's fields and
  :func:`store_url_and_source` says which URL a task would open.
  :class:`~airflow_provider_deltacc.contract.exceptions.LeaseStoreUnavailable` is raised when a store
  server cannot be reached.
- :func:`hold_lease`: hold a lease around a block of work (bounded wait, heartbeat, release);
  :class:`~.fence.LeaseFence` stops the work before its commit when the lease lapsed.
- :func:`clash`, :func:`maintenance_conflicts`, :func:`maintenance_lease_conflicts`: which leases must not
  overlap which, per the conflict matrix and partitions (the predicates the gate and writers acquire with).

Imports the standard library, SQLAlchemy, the job contract, the conflict matrix and (for types only) the
commit loop's turns (``occ``); never the gate, the turns, the engine, the Spark job, the hooks, the operators
or the deployment settings (``tests/unit/test_import_rules.py``): it runs in operators, triggers, the
triggerer and the lease CLI alike.
"""

from __future__ import annotations

from airflow_provider_deltacc.leases.conflicts import (
    Clash,
    clash,
    maintenance_conflicts,
    maintenance_lease_conflicts,
)
from airflow_provider_deltacc.leases.factory import (
    LEASE_STORE_URL_ENV,
    STORE_CONN_TYPES,
    store_from_url,
    store_url_and_source,
    store_url_from_connection,
)
from airflow_provider_deltacc.leases.heartbeat import HeldLease, hold_lease
from airflow_provider_deltacc.leases.lease import (
    DEFAULT_TTL_S,
    Lease,
    LeaseRequest,
    format_holder,
    parse_op_kind,
)
from airflow_provider_deltacc.leases.postgres_store import PostgresLeaseStore, mask_url
from airflow_provider_deltacc.leases.sqlite_store import LEASE_DB_ENV, SqliteLeaseStore, default_sqlite_path
from airflow_provider_deltacc.leases.store import AcquireResult, ConflictPredicate, LeaseStore

__all__ = [
    "DEFAULT_TTL_S",
    "LEASE_DB_ENV",
    "LEASE_STORE_URL_ENV",
    "STORE_CONN_TYPES",
    "AcquireResult",
    "Clash",
    "ConflictPredicate",
    "HeldLease",
    "Lease",
    "LeaseRequest",
    "LeaseStore",
    "PostgresLeaseStore",
    "SqliteLeaseStore",
    "clash",
    "default_sqlite_path",
    "format_holder",
    "hold_lease",
    "maintenance_conflicts",
    "maintenance_lease_conflicts",
    "mask_url",
    "parse_op_kind",
    "store_from_url",
    "store_url_and_source",
    "store_url_from_connection",
]
