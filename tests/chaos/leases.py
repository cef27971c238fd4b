"""The lease holder the chaos run kills: a spawned process holding one lease with heartbeats until SIGKILL."""

from __future__ import annotations

import time
from typing import Any

from airflow_provider_deltacc.leases import LeaseRequest, hold_lease, store_from_url


def hold_until_killed(
    url: str,
    table: str,
    holder: str,
    op_kind: str,
    partitions: list[dict[str, str]] | None,
    ttl_s: float,
    heartbeat_s: float,
    ready: Any,
) -> None:
    """Hold an ``op_kind`` lease on ``table`` with heartbeats, signal ``ready``, then sleep until killed.

    :param url: the lease store URL.
    :param table: the table the lease is on.
    :param holder: the holder name (the supervisor finds the lease by it).
    :param op_kind: the operation kind, e.g. ``MERGE`` (a writer) or ``OPTIMIZE`` (maintenance).
    :param partitions: the partitions it covers, None for the whole table.
    :param ttl_s: the lease TTL.
    :param heartbeat_s: the heartbeat interval.
    :param ready: an event set once the lease is held.
    """
    store = store_from_url(url)
    request = LeaseRequest(table, holder, op_kind, partitions=partitions, ttl_s=ttl_s)  # type: ignore[arg-type]
    with hold_lease(
        store, request, conflicts=lambda _lease: False, wait_timeout_s=0, heartbeat_s=heartbeat_s
    ):
        ready.set()
        time.sleep(600)
