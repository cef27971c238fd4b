"""Shared helpers for the maintenance tests: a task-instance context, a recording hook, lease shortcuts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.fast_path import LogAnswer
from airflow_provider_deltacc.leases import Lease, LeaseRequest, LeaseStore, store_from_url
from tests.support.spec_views import json_view


@dataclass
class FakeTI:
    dag_id: str = "ingest"
    task_id: str = "merge_orders"
    map_index: int = -1
    run_id: str = "manual__2026-11-20"
    try_number: int = 1
    max_tries: int = 2  # the operators' default retries
    xcoms: dict[str, Any] = field(default_factory=dict)

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcoms[key] = value


def context(dag_id: str = "ingest", task_id: str = "merge_orders", map_index: int = -1) -> dict[str, Any]:
    ti = FakeTI(dag_id, task_id, map_index)
    return {"ti": ti, "run_id": ti.run_id}


class RecordingHook:
    """Stands in for DeltaCCHook: records specs and what the lease store showed while the job ran."""

    loop_runs_here = True  # the job takes its turns itself, as in spark_connect and in_process mode
    driver_reaches_worker = False

    def __init__(self, store_url: str, table: str, action: Callable[[], None] | None = None) -> None:
        self.store_url = store_url
        self.table = table
        self.action = action
        self.specs: list[dict[str, Any]] = []
        self.active_during: list[list[Lease]] = []

    def consult_log(self, spec: Any) -> LogAnswer:
        return LogAnswer()

    def check_deployment(self, table: Table) -> None:
        return None

    def run(self, spec: Any, *, consult_log: bool = True, turns: Any = None) -> dict[str, Any]:
        # Recorded as the JSON a spark-submit driver would read: the tests look at its fields.
        spec = json_view(spec)
        self.specs.append(spec)
        with store_from_url(self.store_url) as store:
            self.active_during.append(store.active(self.table))
        if self.action is not None:
            self.action()
        return {"status": "committed", "table": spec["table"], "table_version": 1, "attempts": []}

    def on_kill(self) -> None:
        return None


def with_hook(operator: Any, hook: Any) -> Any:
    """Give an operator a hook without building a DeltaCCHook (``hook`` is a cached property)."""
    operator.__dict__["hook"] = hook
    return operator


def grant(
    store: LeaseStore,
    table: str,
    op: OpKind,
    partitions: list[dict[str, str]] | None = None,
    *,
    holder: str = "ingest.merge_orders/manual__1",
    ttl_s: float = 300.0,
) -> Lease:
    result = store.try_acquire(LeaseRequest(table, holder, op, partitions, ttl_s), lambda _lease: False)
    assert result.lease is not None, result.blocking
    return result.lease


async def first_event(trigger: Any, timeout_s: float = 20.0) -> dict[str, Any]:
    """Run a trigger until its first event and return the payload."""
    generator = trigger.run()
    try:
        event = await asyncio.wait_for(generator.__anext__(), timeout_s)
    finally:
        await generator.aclose()
    payload: dict[str, Any] = event.payload
    return payload


def logged(caplog: Any, capsys: Any) -> str:
    """Everything logged so far: stdlib records (caplog) and the task logger's structlog output (stdout)."""
    captured = capsys.readouterr()
    return "\n".join([*caplog.messages, captured.out, captured.err])
