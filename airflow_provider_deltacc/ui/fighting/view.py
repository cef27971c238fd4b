"""Everything the "who is fighting over this table" page shows (:class:`TableView`), read for one table and
range as a user who may read some DAGs (:func:`table_view`), and the range a request asks for.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_deltacc.contract.redaction import redact_text, sensitive_values
from airflow_provider_deltacc.contract.table import Table, local_path
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.ui.fighting.commits import Commits, table_commits
from airflow_provider_deltacc.ui.fighting.leases import LeaseView, read_leases
from airflow_provider_deltacc.ui.fighting.log import PAGE_READ_OPTIONS, read_log, task_storage_options
from airflow_provider_deltacc.ui.fighting.redaction import redacted, url_secrets
from airflow_provider_deltacc.ui.fighting.reports import read_table_reports
from airflow_provider_deltacc.ui.fighting.winners import Winners, conflict_winners
from airflow_provider_deltacc.ui.filters import TimeRange
from airflow_provider_deltacc.ui.filters import time_range as read_time_range

log = logging.getLogger(__name__)

#: The range shown when the request names none.
DEFAULT_RANGE = timedelta(hours=24)


def parse_time_range(since: str | None, until: str | None, *, now: datetime) -> TimeRange:
    """The range the request asks for (:func:`~airflow_provider_deltacc.ui.filters.time_range`); the last
    :data:`DEFAULT_RANGE` up to ``now`` by default.

    :raises ViewInputError: naming the parameter, its value and the form it takes.
    """
    return read_time_range(since, until, default=DEFAULT_RANGE, now=now)


@dataclass
class TableView:
    """Everything the "who is fighting over this table" page shows.

    :param key: the table's key.
    :param time_range: the range shown.
    :param location: the spelling the log was read through (None: it was not read).
    :param commits: the commits in the range (None: the log could not be read).
    :param log_error: why the log could not be read.
    :param log_covers_range: whether the log read reaches back to the range's start.
    :param winners: the winners of the recorded conflicts in the range.
    :param leases: the live leases.
    :param reports: how many reports of readable DAGs name the table.
    :param reports_bounded: whether the reports read were bounded.
    :param notes: what else the page should say (no storage options, ...).
    """

    key: str
    time_range: TimeRange
    location: str | None = None
    commits: Commits | None = None
    log_error: str | None = None
    log_covers_range: bool = True
    winners: Winners = field(default_factory=lambda: Winners(()))
    leases: LeaseView = field(default_factory=LeaseView)
    reports: int = 0
    reports_bounded: bool = False
    notes: list[str] = field(default_factory=list)


def _log_options(location: str, report: Any, notes: list[str]) -> dict[str, str] | None:
    """The storage options to read ``location`` with: none for a local path, else the newest writer's (with
    :data:`~airflow_provider_deltacc.ui.fighting.log.PAGE_READ_OPTIONS` under them)."""
    if local_path(location) is not None:
        return None
    options, note = task_storage_options(report.dag_id, report.task_id)
    if note:
        notes.append(note)
    return {**PAGE_READ_OPTIONS, **(options or {})}


def table_view(table: str, time_range: TimeRange, dag_ids: Iterable[str]) -> TableView:
    """Read everything the page shows for ``table`` (any spelling), as a user who may read ``dag_ids``.

    The log is read through the spelling and the connections of the newest report on the table, so only
    for a table a readable DAG writes.

    :param table: the table, in any spelling.
    :param time_range: the range.
    :param dag_ids: the DAGs the user may read.
    """
    key = table_key(Table(table))
    view = TableView(key, time_range, leases=read_leases(key))
    found, view.reports_bounded = read_table_reports(key, dag_ids, time_range.since)
    view.reports = len(found)
    reports = [r.with_ids() for r in found]
    history: tuple[Mapping[str, Any], ...] = ()
    if not found:
        view.log_error = (
            "no commit report of a DAG you may read names this table, so its log is not read here"
        )
    else:
        history = _read_history(view, found[0])
        if view.log_error is None:
            view.commits = table_commits(history, reports, time_range=time_range)
    view.winners = conflict_winners(reports, history, time_range=time_range)
    return view


def _read_history(view: TableView, newest: Any) -> tuple[Mapping[str, Any], ...]:
    """The log's history through the spelling and connections of ``newest`` (the table's newest report);
    empty, with ``view.log_error`` set, when it cannot be read."""
    location = str(newest.report.get("table") or view.key)
    secrets = url_secrets(location)
    view.location = redact_text(location, secrets)
    options: dict[str, str] | None = None
    try:
        options = _log_options(location, newest, view.notes)
        read = read_log(location, options, view.time_range.since)
    except Exception as exc:
        view.log_error = redacted(exc, [*sensitive_values(options), *secrets])
        log.warning("cannot read the Delta log of %s: %s", view.key, view.log_error)
        return ()
    view.log_covers_range = read.covers_range
    return read.rows
