"""Who is fighting over one table: its commits read from the Delta log with delta-rs, who wrote each (an
Airflow task or a writer outside Airflow), which commits made writers lose, and the live leases and turns.

- :mod:`.reports`: what the table's commit reports say (which task committed each version, which attempts
  lost a conflict) and reading them from the metadata DB;
- :mod:`.commits`: the commits of a range, each with who wrote it, and the writers outside Airflow;
- :mod:`.winners`: the commits that made writers lose, with their losers;
- :mod:`.leases`: the live leases in grant order, read from the lease store;
- :mod:`.log`: the log's history read with delta-rs, through a task's connections from its serialized DAG;
- :mod:`.redaction`: error messages with the secrets hidden;
- :mod:`.view`: the range a request asks for, and everything the page shows (:func:`~.view.table_view`).

The pure functions (:func:`~.view.parse_time_range`, :func:`~.commits.table_commits`,
:func:`~.winners.conflict_winners`, :func:`~.leases.lease_rows`) take the log's history rows
(``DeltaTable.history()``), commit reports (as :meth:`~airflow_provider_deltacc.ui.data.TaskReport.with_ids`
gives them) and leases; the functions that read the metadata DB, the serialized DAGs, the Delta log and the
lease store import Airflow only when called. Nothing is written, and no secret reaches the page: error
messages are redacted with the storage options' and the lease store's secrets.
"""

from __future__ import annotations

from airflow_provider_deltacc.ui.fighting.commits import (
    COMMIT_LIMIT,
    CommitRow,
    Commits,
    OutsideWriter,
    Writer,
    short_parameters,
    table_commits,
)
from airflow_provider_deltacc.ui.fighting.leases import LeaseRow, LeaseView, lease_rows
from airflow_provider_deltacc.ui.fighting.log import HISTORY_SCAN_LIMIT, read_log, task_storage_options
from airflow_provider_deltacc.ui.fighting.redaction import redacted
from airflow_provider_deltacc.ui.fighting.view import TableView, parse_time_range, table_view
from airflow_provider_deltacc.ui.fighting.winners import Winner, Winners, conflict_winners
from airflow_provider_deltacc.ui.filters import TimeRange

__all__ = [
    "COMMIT_LIMIT",
    "HISTORY_SCAN_LIMIT",
    "CommitRow",
    "Commits",
    "LeaseRow",
    "LeaseView",
    "OutsideWriter",
    "TableView",
    "TimeRange",
    "Winner",
    "Winners",
    "Writer",
    "conflict_winners",
    "lease_rows",
    "parse_time_range",
    "read_log",
    "redacted",
    "short_parameters",
    "table_commits",
    "table_view",
    "task_storage_options",
]
