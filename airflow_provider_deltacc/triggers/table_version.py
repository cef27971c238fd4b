"""DeltaTableTrigger: poll a Delta table's log with delta-rs until a condition holds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_deltacc.contract.exceptions import refuse_renamed
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.delta_log.reads import TableCondition, check_table


class DeltaTableTrigger(BaseTrigger):
    """Yield one event when the table satisfies the condition, or an error event if reading fails.

    :param table: the table's storage location (path or URI).
    :param condition: a :class:`~airflow_provider_deltacc.delta_log.reads.TableCondition` as a dict.
    :param poll_interval: seconds between reads of the log.
    :param storage_options: delta-rs storage options (credentials are encrypted with the trigger).
    :param aws_conn_id: an ``aws`` connection, looked up in the triggerer: its options go under
        ``storage_options``, and only its name is serialized.
    :param azure_conn_id: a ``wasb`` or ``adls`` connection, the same way.
    :param gcp_conn_id: a ``google_cloud_platform`` connection, the same way.
    """

    def __init__(
        self,
        *,
        table: str | None = None,
        condition: dict[str, Any],
        poll_interval: float = 30.0,
        storage_options: dict[str, str] | None = None,
        aws_conn_id: str | None = None,
        azure_conn_id: str | None = None,
        gcp_conn_id: str | None = None,
        **renamed: Any,
    ) -> None:
        super().__init__()
        refuse_renamed(renamed, {"table_uri": "table"}, owner=type(self).__name__)
        if renamed or table is None:
            raise TypeError(f"{type(self).__name__} takes table= and condition=; got {sorted(renamed)}")
        self.table = table
        self.condition = condition
        self.poll_interval = poll_interval
        self.storage_options = storage_options
        self.aws_conn_id = aws_conn_id
        self.azure_conn_id = azure_conn_id
        self.gcp_conn_id = gcp_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "airflow_provider_deltacc.triggers.table_version.DeltaTableTrigger",
            {
                "table": self.table,
                "condition": self.condition,
                "poll_interval": self.poll_interval,
                "storage_options": self.storage_options,
                "aws_conn_id": self.aws_conn_id,
                "azure_conn_id": self.azure_conn_id,
                "gcp_conn_id": self.gcp_conn_id,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_provider_deltacc.object_storage.connections import StoreConnections, storage_options_for

        condition = TableCondition(**self.condition)
        try:
            options = await asyncio.to_thread(
                storage_options_for, StoreConnections.of(self), self.storage_options
            )
        except Exception as exc:
            yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
            return
        while True:
            try:
                # delta-rs reads are blocking I/O; keep them off the triggerer's event loop.
                match = await asyncio.to_thread(check_table, Table(self.table), condition, options)
            except Exception as exc:
                yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
                return
            if match is not None:
                yield TriggerEvent({"status": "success", "match": match})
                return
            self.log.debug("Delta table %s does not satisfy %s yet", self.table, self.condition)
            await asyncio.sleep(self.poll_interval)
