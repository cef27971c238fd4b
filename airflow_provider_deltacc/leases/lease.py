"""Write and maintenance leases: who works on which table (and partitions), since when, until when."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.leases.clock import require_aware
from airflow_provider_deltacc.leases.partitions import PartitionScope, format_scope, normalize_scope

#: The default lease time-to-live; a holder heartbeats well within it (see ``hold_lease``).
DEFAULT_TTL_S = 120.0


def parse_op_kind(value: OpKind | str, *, field: str = "op_kind") -> OpKind:
    """Accept an :class:`OpKind` or its value/name (``"merge"``, ``"MERGE"``).

    :param value: the operation kind.
    :param field: the parameter name quoted in the error message.
    :raises ValueError: naming the valid kinds.
    """
    if isinstance(value, OpKind):
        return value
    text = str(value).strip()
    for kind in OpKind:
        if text in (kind.value, kind.name) or text.lower() == kind.value.lower():
            return kind
    valid = ", ".join(kind.name for kind in OpKind)
    raise ValueError(f"{field}={value!r} is not an operation kind; use one of {valid}")


def format_holder(dag_id: str, task_id: str, run_id: str, map_index: int = -1) -> str:
    """The conventional holder name ``dag.task[map]/run`` (``[map]`` only for mapped tasks).

    :param dag_id: the DAG id.
    :param task_id: the task id.
    :param run_id: the DAG run id.
    :param map_index: the mapped task index, -1 when not mapped.
    """
    mapped = f"[{map_index}]" if map_index >= 0 else ""
    return f"{dag_id}.{task_id}{mapped}/{run_id}"


def _check_ttl(ttl_s: float) -> None:
    if not isinstance(ttl_s, int | float) or not math.isfinite(ttl_s) or ttl_s <= 0:
        raise ValueError(f"ttl_s={ttl_s!r} must be a positive number of seconds, e.g. 120")


@dataclass(frozen=True)
class LeaseRequest:
    """What a task asks a lease store for.

    :param table: the Delta table's name or path, in any spelling; kept as its key
        (:func:`~airflow_provider_deltacc.contract.table_location.table_key`), so that every task on the
        table shares its leases however it spells it.
    :param holder: who holds the lease, e.g. ``ingest.merge_orders[3]/scheduled__2026-11-20`` (see
        :func:`format_holder`).
    :param op_kind: the operation the holder runs.
    :param partitions: the partitions it touches (pinned), or None for the whole table.
    :param ttl_s: seconds the lease stays alive without a heartbeat.
    """

    table: str
    holder: str
    op_kind: OpKind
    partitions: PartitionScope = None
    ttl_s: float = DEFAULT_TTL_S

    def __post_init__(self) -> None:
        for name in ("table", "holder"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name}={value!r} must be a non-empty string")
        _check_ttl(self.ttl_s)
        object.__setattr__(self, "table", table_key(Table(self.table)))
        object.__setattr__(self, "op_kind", parse_op_kind(self.op_kind))
        object.__setattr__(self, "partitions", normalize_scope(self.partitions))


@dataclass(frozen=True)
class Lease:
    """A lease as a store keeps it; it stays on record after it ends, for audits.

    :param lease_id: a unique id.
    :param table: the table's key (see :class:`LeaseRequest`).
    :param holder: who holds it.
    :param op_kind: the holder's operation.
    :param partitions: the partitions it touches, or None for the whole table.
    :param acquired_at: when it was granted (UTC).
    :param heartbeat_at: the last heartbeat, initially ``acquired_at`` (UTC).
    :param ttl_s: seconds it stays alive after a heartbeat.
    :param released_at: when the holder released it, or None (still held, or expired).
    """

    lease_id: str
    table: str
    holder: str
    op_kind: OpKind
    partitions: PartitionScope
    acquired_at: datetime
    heartbeat_at: datetime
    ttl_s: float
    released_at: datetime | None = field(default=None)

    @property
    def expires_at(self) -> datetime:
        """When the lease ends unless it is renewed."""
        return self.heartbeat_at + timedelta(seconds=self.ttl_s)

    def is_active(self, now: datetime) -> bool:
        """Whether the lease still counts at ``now``: not released and not expired.

        :param now: a timezone-aware time.
        """
        now = require_aware(now, field="now")
        return self.released_at is None and now < self.expires_at

    def end_time(self, now: datetime) -> datetime | None:
        """When the lease stopped counting (release or expiry, whichever came first), None if active.

        :param now: a timezone-aware time.
        """
        if self.is_active(now):
            return None
        if self.released_at is None:
            return self.expires_at
        return min(self.released_at, self.expires_at)

    def describe(self) -> str:
        """``MERGE lease on date=2026-11-20 by ingest.merge_orders``, for logs and reasons."""
        return f"{self.op_kind.name} lease on {format_scope(self.partitions)} by {self.holder}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (ISO-8601 times); :meth:`from_dict` reverses it."""
        return {
            "lease_id": self.lease_id,
            "table": self.table,
            "holder": self.holder,
            "op_kind": self.op_kind.value,
            "partitions": [dict(spec) for spec in self.partitions] if self.partitions is not None else None,
            "acquired_at": self.acquired_at.isoformat(),
            "heartbeat_at": self.heartbeat_at.isoformat(),
            "ttl_s": self.ttl_s,
            "released_at": self.released_at.isoformat() if self.released_at is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lease:
        """Rebuild a lease from :meth:`to_dict` output.

        :param data: the dict.
        """
        released = data.get("released_at")
        return cls(
            lease_id=str(data["lease_id"]),
            table=str(data["table"]),
            holder=str(data["holder"]),
            op_kind=parse_op_kind(data["op_kind"]),
            partitions=normalize_scope(data.get("partitions")),
            acquired_at=require_aware(datetime.fromisoformat(data["acquired_at"]), field="acquired_at"),
            heartbeat_at=require_aware(datetime.fromisoformat(data["heartbeat_at"]), field="heartbeat_at"),
            ttl_s=float(data["ttl_s"]),
            released_at=(
                require_aware(datetime.fromisoformat(released), field="released_at") if released else None
            ),
        )
