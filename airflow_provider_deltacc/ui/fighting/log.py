"""Reading the table's Delta log (back only as far as the range needs, and bounded) with the provider's log
reader (delta-rs where it cannot), and the delta-rs storage options of a task, from the connections it names
in its serialized DAG.

The log readers and Airflow are imported only when a read runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import is_relative
from airflow_provider_deltacc.ui.fighting.commits import COMMIT_LIMIT, commit_time

#: The most commits read from the log for one page, however far back the range goes.
HISTORY_SCAN_LIMIT = 5000
#: Object-store client settings for the page's reads, under the task's own: an unreachable store fails the
#: read within seconds instead of holding an api-server thread through delta-rs' default 10 retries.
PAGE_READ_OPTIONS = {"max_retries": "2", "retry_timeout": "20s", "connect_timeout": "10s", "timeout": "60s"}


@dataclass(frozen=True)
class LogRead:
    """What was read from the table's log.

    :param rows: the history rows read, newest first.
    :param covers_range: whether they reach back to the range's start (or are the whole log).
    :param whole_log: whether they are every commit the log still holds.
    """

    rows: tuple[Mapping[str, Any], ...]
    covers_range: bool
    whole_log: bool


def _log_location(location: str) -> Table:
    """The table at ``location`` when delta-rs can open it from here, else a ValueError saying why not."""
    table = Table(location)
    if not table.is_path:
        raise ValueError(
            f"{location!r} is a catalog table name: delta-rs reads the log from the table's storage location "
            "(a path or URI such as s3://bucket/orders), which only Spark's catalog knows"
        )
    if is_relative(table):
        raise ValueError(f"{location!r} is a relative path: only the Spark job knows what it is relative to")
    return table


def read_log(
    location: str,
    storage_options: Mapping[str, str] | None,
    since: datetime,
    *,
    scan_limit: int = HISTORY_SCAN_LIMIT,
) -> LogRead:
    """The newest commits of the table's log back to ``since``, reading at most ``scan_limit`` of them.

    :param location: the table as a task spelled it (a path or URI).
    :param storage_options: delta-rs storage options (None: none).
    :param since: the oldest commit time wanted.
    :param scan_limit: the most commits read.
    :raises Exception: whatever the read raises (a missing table, refused credentials), or a ValueError for
        a location it cannot open.
    """
    from airflow_provider_deltacc.delta_log.log_reader import commit_infos

    table = _log_location(location)
    limit = min(2 * COMMIT_LIMIT, scan_limit)
    while True:
        rows = commit_infos(table, storage_options, limit)
        if len(rows) < limit:
            return LogRead(tuple(rows), True, True)
        oldest = min((t for t in (commit_time(r) for r in rows) if t is not None), default=None)
        if (oldest is not None and oldest < since) or limit >= scan_limit:
            return LogRead(tuple(rows), oldest is not None and oldest < since, False)
        limit = min(limit * 4, scan_limit)


def _task_attribute(task: Any, name: str) -> Any:
    """An attribute of a deserialized task; a mapped task keeps its constructor's in ``partial_kwargs``."""
    value = getattr(task, name, None)
    if value is None:
        value = (getattr(task, "partial_kwargs", None) or {}).get(name)
    return value


def task_storage_options(dag_id: str, task_id: str) -> tuple[dict[str, str] | None, str | None]:
    """delta-rs storage options from the connections a task names, read from the serialized DAG (no DAG
    file is imported), and a note when there are none to be had.

    :param dag_id: the DAG.
    :param task_id: the task.
    :raises Exception: when a connection it names is missing or malformed (the message names it).
    """
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.utils.session import create_session

    from airflow_provider_deltacc.object_storage.connections import (
        STORE_CONN_FIELDS,
        StoreConnections,
        storage_options_for,
    )

    with create_session() as session:
        row = SerializedDagModel.get(dag_id, session=session)
        try:
            dag = row.dag if row is not None else None
        except Exception as exc:  # a timetable or a class of a plugin the api-server lacks
            return None, f"the serialized DAG {dag_id} cannot be read here ({type(exc).__name__})"
    if dag is None or not dag.has_task(task_id):
        return None, f"{dag_id}.{task_id} is not in a serialized DAG, so no connection of it is used"
    task = dag.get_task(task_id)
    named = {name: _task_attribute(task, name) or None for name in STORE_CONN_FIELDS}
    templated = sorted(name for name, value in named.items() if isinstance(value, str) and "{{" in value)
    for name in templated:  # rendered only when the task runs
        named[name] = None
    note = f"{dag_id}.{task_id}'s {', '.join(templated)} is a template, not used here" if templated else None
    explicit = _task_attribute(task, "storage_options")
    options = storage_options_for(StoreConnections(**named), explicit if isinstance(explicit, dict) else None)
    return options, note
