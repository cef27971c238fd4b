"""The lease table and the schema's version, shared by the SQLite and PostgreSQL stores (SQLAlchemy Core)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Dialect, Float, Index, Integer, MetaData, String, Table
from sqlalchemy.engine import Row
from sqlalchemy.types import TypeDecorator

from airflow_provider_deltacc.leases.lease import Lease, parse_op_kind
from airflow_provider_deltacc.leases.partitions import normalize_scope

LEASE_TABLE = "deltacc_leases"
SCHEMA_TABLE = "deltacc_schema"


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, on every backend.

    PostgreSQL stores ``timestamptz``; SQLite has no time zones, so UTC is stored naive there. Naive values
    are refused on the way in because their meaning would depend on the machine.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()} bound to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()

leases = Table(
    LEASE_TABLE,
    metadata,
    Column("lease_id", String(64), primary_key=True),
    Column("table_name", String(1024), nullable=False),
    Column("holder", String(1024), nullable=False),
    Column("op_kind", String(32), nullable=False),
    Column("partitions", JSON(none_as_null=True), nullable=True),
    Column("acquired_at", UtcDateTime(), nullable=False),
    Column("heartbeat_at", UtcDateTime(), nullable=False),
    # Kept denormalized (heartbeat_at + ttl_s) so expiry is a portable, indexable comparison.
    Column("expires_at", UtcDateTime(), nullable=False),
    Column("ttl_s", Float, nullable=False),
    Column("released_at", UtcDateTime(), nullable=True),
    Index("ix_deltacc_leases_table_live", "table_name", "released_at", "expires_at"),
    # The purge of old leases finds them by expiry, on every table at once.
    Index("ix_deltacc_leases_expires", "expires_at"),
)

#: One row per component of the schema (``leases``): the version its tables were migrated to.
schema_versions = Table(
    SCHEMA_TABLE,
    metadata,
    Column("component", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
)


def lease_to_row(lease: Lease) -> dict[str, Any]:
    """The column values for ``lease``.

    :param lease: the lease.
    """
    return {
        "lease_id": lease.lease_id,
        "table_name": lease.table,
        "holder": lease.holder,
        "op_kind": lease.op_kind.value,
        "partitions": lease.partitions,
        "acquired_at": lease.acquired_at,
        "heartbeat_at": lease.heartbeat_at,
        "expires_at": lease.expires_at,
        "ttl_s": lease.ttl_s,
        "released_at": lease.released_at,
    }


def row_to_lease(row: Row[Any]) -> Lease:
    """The lease a row of :data:`leases` holds.

    :param row: a row selected from :data:`leases`.
    """
    return Lease(
        lease_id=row.lease_id,
        table=row.table_name,
        holder=row.holder,
        op_kind=parse_op_kind(row.op_kind),
        partitions=normalize_scope(row.partitions),
        acquired_at=row.acquired_at,
        heartbeat_at=row.heartbeat_at,
        ttl_s=float(row.ttl_s),
        released_at=row.released_at,
    )
