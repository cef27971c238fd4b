"""DeltaGateTrigger: ask the maintenance gate in the triggerer until OPTIMIZE or VACUUM may run.

The gate reads the lease store (SQLite or PostgreSQL, blocking I/O), so every decision runs in a thread
with :func:`asyncio.to_thread`; the event loop only sleeps. The trigger never takes a lease: the resumed
task acquires its maintenance lease atomically and defers again if it lost a race, so running this trigger
twice (triggerer HA) is harmless.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_deltacc.contract.exceptions import LeaseStoreUnavailable
from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.gate.decision import GateDecision
from airflow_provider_deltacc.gate.request import GateRequest, poll_delay
from airflow_provider_deltacc.leases.store import LeaseStore

CLASSPATH = "airflow_provider_deltacc.triggers.gate.DeltaGateTrigger"


class DeltaGateTrigger(BaseTrigger):
    """Yield one event when the gate says go (``status: go``), refuses (``refused``) or cannot be asked
    (``error``, with ``lease_store`` naming the store when it could not be reached).

    Between decisions it sleeps ``min(wait_until - now, poll_interval)``: a declared window is re-checked
    right when it closes, a lease (usually released before it expires) at least every ``poll_interval``.

    The store is given as the worker resolved it (the triggerer needs neither the operator's arguments nor
    the ``[deltacc]`` config): a connection id, which the triggerer looks up itself, so no password is stored
    with the trigger; or a URL (the older ``lease_store_url`` / ``$DELTACC_LEASE_STORE_URL``, or the default
    SQLite file), whose credentials Airflow encrypts with the trigger's kwargs.

    :param request: a :class:`~airflow_provider_deltacc.gate.GateRequest` as a dict.
    :param lease_store_url: the store's URL, resolved in the worker.
    :param poll_interval: the longest pause between two decisions, in seconds.
    :param max_store_errors: consecutive store errors tolerated before an ``error`` event.
    :param lease_store_conn_id: the store's ``postgres`` or ``sqlite`` connection, instead of a URL.
    """

    def __init__(
        self,
        *,
        request: dict[str, Any],
        lease_store_url: str | None = None,
        poll_interval: float = 30.0,
        max_store_errors: int = 3,
        lease_store_conn_id: str | None = None,
    ) -> None:
        super().__init__()
        if (lease_store_url is None) == (lease_store_conn_id is None):
            raise ValueError("DeltaGateTrigger needs exactly one of lease_store_url and lease_store_conn_id")
        self.request = request
        self.lease_store_url = lease_store_url
        self.poll_interval = poll_interval
        self.max_store_errors = max_store_errors
        self.lease_store_conn_id = lease_store_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            CLASSPATH,
            {
                "request": self.request,
                "lease_store_url": self.lease_store_url,
                "poll_interval": self.poll_interval,
                "max_store_errors": self.max_store_errors,
                "lease_store_conn_id": self.lease_store_conn_id,
            },
        )

    def _open(self) -> LeaseStore:
        from airflow_provider_deltacc.leases.factory import store_from_url

        if self.lease_store_conn_id is not None:
            from airflow_provider_deltacc.hooks.lease_store import connection_store_url

            return store_from_url(connection_store_url(self.lease_store_conn_id))
        return store_from_url(self.lease_store_url)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            gate = GateRequest.from_dict(self.request)
        except Exception as exc:
            yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
            return
        store: LeaseStore | None = None
        errors, last_reason = 0, ""
        try:
            while True:
                try:
                    if store is None:
                        store = await asyncio.to_thread(self._open)
                    decision: GateDecision = await asyncio.to_thread(gate.decide, store)
                    errors = 0
                except DeltaCCInputError as exc:  # a missing or wrong connection: asking again cannot help
                    yield TriggerEvent({"status": "error", "message": str(exc), "field": exc.field})
                    return
                except Exception as exc:
                    errors += 1
                    named = isinstance(exc, LeaseStoreUnavailable)  # its message says what it is
                    message = str(exc) if named else f"{type(exc).__name__}: {exc}"
                    if errors >= self.max_store_errors:
                        event: dict[str, Any] = {"status": "error", "message": message}
                        if isinstance(exc, LeaseStoreUnavailable):
                            event["lease_store"] = exc.store  # the task fails as infrastructure
                        yield TriggerEvent(event)
                        return
                    self.log.warning(
                        "gate on %s: lease store error %d of %d (%s); asking again in %.1f s",
                        gate.table,
                        errors,
                        self.max_store_errors,
                        message,
                        self.poll_interval,
                    )
                    await asyncio.sleep(self.poll_interval)
                    continue
                if decision.go or decision.refused:
                    status = "go" if decision.go else "refused"
                    yield TriggerEvent({"status": status, "decision": decision.to_dict()})
                    return
                delay = poll_delay(decision, self.poll_interval)
                if decision.reason != last_reason:
                    self.log.info(
                        "gate: %s on %s: %s (asking again in %.1f s)",
                        gate.maintenance_op.name,
                        gate.table,
                        decision.reason,
                        delay,
                    )
                    last_reason = decision.reason
                await asyncio.sleep(delay)
        finally:
            if store is not None:
                store.close()
