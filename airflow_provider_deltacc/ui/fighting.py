"""Who is fighting over one table: its commits read from the Delta log with delta-rs, who wrote each (an
Airflow task or a writer outside Airflow), which commits made writers lose, and the live leases and queues.

The pure functions (:func:`parse_time_range`, :func:`table_commits`, :func:`conflict_winners`,
:func:`lease_rows`) take the log's history rows (``DeltaTable.history()``), commit reports (as
:meth:`~airflow_provider_deltacc.ui.data.TaskReport.with_ids` gives them) and leases; the small functions
after them read the metadata DB, the serialized DAGs, the Delta log and the lease store, and import Airflow
only when called. Nothing is written, and no secret reaches the page: error messages are redacted with the
storage options' and the lease store's secrets.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.commits import TAG_PREFIX
from airflow_provider_deltacc.contract.redaction import redact_text, sensitive_values
from airflow_provider_deltacc.contract.table import is_path, local_path
from airflow_provider_deltacc.contract.table_identity import table_key
from airflow_provider_deltacc.occ.operations import MAINTENANCE_KINDS
from airflow_provider_deltacc.retries.tries import report_tries
from airflow_provider_deltacc.ui.data import REPORT_LIMIT, report_table
from airflow_provider_deltacc.ui.filters import TimeRange
from airflow_provider_deltacc.ui.filters import time_range as read_time_range
from airflow_provider_deltacc.windows.admission import FIRST_LEVELS
from airflow_provider_deltacc.windows.conflicts import writer_turn_conflicts
from airflow_provider_deltacc.windows.lease import Lease
from airflow_provider_deltacc.windows.partitions import format_scope

log = logging.getLogger(__name__)

#: The most commits the page lists (newest first).
COMMIT_LIMIT = 500
#: The most commits read from the log for one page, however far back the range goes.
HISTORY_SCAN_LIMIT = 5000
#: The range shown when the request names none.
DEFAULT_RANGE = timedelta(hours=24)
#: commitInfo fields that say who wrote a commit outside Airflow, in the order shown.
_WHO_KEYS = ("engineInfo", "clientVersion", "userName", "userId", "clusterId", "job", "notebook")
_COMMITTED = ("committed", "skipped_duplicate")
#: Object-store client settings for the page's reads, under the task's own: an unreachable store fails the
#: read within seconds instead of holding an api-server thread through delta-rs' default 10 retries.
PAGE_READ_OPTIONS = {"max_retries": "2", "retry_timeout": "20s", "connect_timeout": "10s", "timeout": "60s"}
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def parse_time_range(since: str | None, until: str | None, *, now: datetime) -> TimeRange:
    """The range the request asks for (:func:`~airflow_provider_deltacc.ui.filters.time_range`); the last
    :data:`DEFAULT_RANGE` up to ``now`` by default.

    :raises ViewInputError: naming the parameter, its value and the form it takes.
    """
    return read_time_range(since, until, default=DEFAULT_RANGE, now=now)


def commit_time(row: Mapping[str, Any]) -> datetime | None:
    """A history row's commit time (its ``timestamp``, epoch milliseconds), None when it has none.

    :param row: one entry of ``DeltaTable.history()``.
    """
    try:
        return datetime.fromtimestamp(float(row["timestamp"]) / 1000.0, tz=UTC)
    except (KeyError, TypeError, ValueError, OverflowError, OSError):
        return None


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def short_parameters(parameters: Any, *, width: int = 160) -> str:
    """``mode=Append, partitionBy=["p"]``: a commit's ``operationParameters`` on one short line.

    :param parameters: the parameters (a mapping; anything else is shown as it is).
    :param width: the most characters.
    """
    if not isinstance(parameters, Mapping):
        return _clip(_text(parameters), width) if parameters else ""
    return _clip(", ".join(f"{k}={_clip(_text(v), 60)}" for k, v in parameters.items()), width)


def is_provider_tag(user_metadata: Any) -> bool:
    """Whether a commit's ``userMetadata`` is the tag the provider puts on its own commits.

    :param user_metadata: the commitInfo's ``userMetadata``.
    """
    return isinstance(user_metadata, str) and user_metadata.startswith(TAG_PREFIX)


def _task(report: Mapping[str, Any]) -> str:
    # The reports come from XCom with their task's ids (``TaskReport.with_ids``).
    dag_id, task_id = report.get("dag_id"), report.get("task_id")
    return f"{dag_id}.{task_id}" if dag_id and task_id else "an unnamed task"


def task_label(report: Mapping[str, Any]) -> str:
    """``dag.task`` (``dag.task[3]`` for a mapped task) of the task that wrote ``report``.

    :param report: a report with its task's ids.
    """
    name = _task(report)
    index = report.get("map_index")
    return f"{name}[{index}]" if isinstance(index, int) and index >= 0 else name


@dataclass(frozen=True)
class Writer:
    """Who wrote a commit.

    :param kind: ``airflow`` (a report names the version, or it carries the provider's tag) or ``outside``.
    :param label: ``dag.task``, ``an Airflow task`` or ``outside Airflow``.
    :param detail: the run, or what the commitInfo says about a writer outside Airflow.
    :param task: the ids of the task instance whose report names the version (for a link), else None.
    """

    kind: Literal["airflow", "outside"]
    label: str
    detail: str
    task: Mapping[str, Any] | None = None


def outside_identity(info: Mapping[str, Any]) -> str:
    """What a commit's commitInfo says about its writer: ``engineInfo=..., userName=...``.

    :param info: the history row.
    """
    said = [f"{key}={_clip(_text(info[key]), 80)}" for key in _WHO_KEYS if info.get(key) not in (None, "")]
    return ", ".join(said) or "the commit names no engine or user"


def writer_of(info: Mapping[str, Any], committed: Mapping[int, Mapping[str, Any]]) -> Writer:
    """Who wrote the commit ``info``.

    :param info: the history row.
    :param committed: the reports that committed each version (see :func:`committed_versions`).
    """
    version = info.get("version")
    report = committed.get(version) if isinstance(version, int) else None
    tagged = is_provider_tag(info.get("userMetadata"))
    if report is not None:
        ids = {k: report.get(k) for k in ("dag_id", "run_id", "task_id", "map_index")}
        detail = f"run {report.get('run_id')}" + ("" if tagged else "; its report names this version")
        return Writer("airflow", task_label(report), detail, ids)
    if tagged:
        detail = "the provider's commit tag; no commit report of a DAG you may read names this version"
        return Writer("airflow", "an Airflow task", detail)
    detail = outside_identity(info)
    metadata = info.get("userMetadata")
    if metadata not in (None, ""):
        detail += f", userMetadata={_clip(_text(metadata), 80)}"
    return Writer("outside", "outside Airflow", detail)


def reports_for_table(key: str, reports: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The reports whose table is ``key`` (however each task spelled it).

    :param key: the table's key (:func:`~airflow_provider_deltacc.contract.table_identity.table_key`).
    :param reports: commit reports.
    """
    return [r for r in reports if report_table(r) == key]


def _tries(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for t in report_tries(dict(report)) if isinstance(t, Mapping)]


def committed_versions(reports: Iterable[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """Per table version, the report of the task that committed it (one of its tries said so).

    :param reports: the table's reports, with their tasks' ids.
    """
    found: dict[int, Mapping[str, Any]] = {}
    skipped: dict[int, Mapping[str, Any]] = {}
    for report in reports:
        for one_try in _tries(report):
            version = one_try.get("table_version")
            if isinstance(version, int) and one_try.get("status") == "committed":
                found.setdefault(version, report)
            elif isinstance(version, int) and one_try.get("status") in _COMMITTED:
                skipped.setdefault(version, report)
    return {**skipped, **found}


@dataclass(frozen=True)
class Loss:
    """One attempt that lost a conflict: to which version, of which kind, by which task.

    :param version: the winning version, None when the conflict does not name it.
    :param kind: the conflict kind, e.g. ``APPEND``.
    :param task: the losing task's ``dag.task``.
    :param operation: the winning operation as the conflict names it ("" when it does not).
    """

    version: int | None
    kind: str
    task: str
    operation: str


def losses(reports: Iterable[Mapping[str, Any]], *, time_range: TimeRange | None = None) -> list[Loss]:
    """Every lost attempt in the reports (whose attempt started in ``time_range`` when given).

    :param reports: the table's reports, with their tasks' ids.
    :param time_range: only attempts that started in it; None: all.
    """
    found = []
    for report in reports:
        loser = _task(report)
        for one_try in _tries(report):
            for attempt in one_try.get("attempts") or []:
                conflict = attempt.get("conflict") if isinstance(attempt, Mapping) else None
                if not isinstance(conflict, Mapping):
                    continue
                if time_range is not None and not time_range.contains(_epoch(attempt.get("started_at"))):
                    continue
                version = conflict.get("winning_version")
                found.append(
                    Loss(
                        version if isinstance(version, int) else None,
                        str(conflict.get("kind") or "").upper(),
                        loser,
                        str(conflict.get("winning_operation") or ""),
                    )
                )
    return found


def _epoch(seconds: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(seconds), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


@dataclass(frozen=True)
class CommitRow:
    """One commit of the table, as the page lists it.

    :param version: the table version.
    :param timestamp: when it was committed (None when the log does not say).
    :param operation: its Delta operation (``WRITE``, ``MERGE``, ...).
    :param parameters: its operation parameters, in short.
    :param writer: who wrote it.
    :param losers: how many recorded attempts lost a conflict to it.
    """

    version: int
    timestamp: datetime | None
    operation: str
    parameters: str
    writer: Writer
    losers: int = 0


@dataclass(frozen=True)
class OutsideWriter:
    """Writers outside Airflow that the commitInfo names alike: how many commits, of which operations.

    :param who: what the commitInfo says about them.
    :param commits: how many commits.
    :param operations: ``(operation, commits)``, most first.
    """

    who: str
    commits: int
    operations: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Commits:
    """The commits of a range, newest first, at most ``limit`` of them.

    :param rows: the commits listed.
    :param in_range: how many commits the range holds (of those read).
    :param limit: the most listed.
    :param outside: writers outside Airflow over every commit in the range.
    """

    rows: tuple[CommitRow, ...]
    in_range: int
    limit: int
    outside: tuple[OutsideWriter, ...] = ()

    @property
    def bounded(self) -> bool:
        """Whether the range holds more commits than are listed."""
        return self.in_range > len(self.rows)


def outside_writers(rows: Iterable[CommitRow], infos: Mapping[int, Mapping[str, Any]]) -> list[OutsideWriter]:
    """The writers outside Airflow among ``rows``, grouped by what their commitInfo says, most commits first.

    :param rows: commits.
    :param infos: the history row of each commit's version.
    """
    operations: dict[str, Counter[str]] = {}
    for row in rows:
        if row.writer.kind == "outside":
            who = outside_identity(infos.get(row.version, {}))
            operations.setdefault(who, Counter())[row.operation or "unknown"] += 1
    found = [
        OutsideWriter(who, sum(ops.values()), tuple(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))))
        for who, ops in operations.items()
    ]
    return sorted(found, key=lambda w: (-w.commits, w.who))


def table_commits(
    history_rows: Iterable[Mapping[str, Any]],
    reports: Sequence[Mapping[str, Any]],
    *,
    time_range: TimeRange | None = None,
    limit: int = COMMIT_LIMIT,
) -> Commits:
    """The table's commits in ``time_range``, newest first, each with who wrote it.

    :param history_rows: the log's history (``DeltaTable.history()``: commitInfo plus ``version``).
    :param reports: the table's commit reports, with their tasks' ids (see :func:`reports_for_table`).
    :param time_range: only commits in it; None: every commit given.
    :param limit: the most commits listed.
    """
    committed = committed_versions(reports)
    lost = Counter(loss.version for loss in losses(reports) if loss.version is not None)
    infos = {
        int(r["version"]): r
        for r in history_rows
        if isinstance(r.get("version"), int) and (time_range is None or time_range.contains(commit_time(r)))
    }
    rows = [
        CommitRow(
            version,
            commit_time(info),
            str(info.get("operation") or ""),
            short_parameters(info.get("operationParameters")),
            writer_of(info, committed),
            lost.get(version, 0),
        )
        for version, info in sorted(infos.items(), reverse=True)
    ]
    return Commits(tuple(rows[:limit]), len(rows), limit, tuple(outside_writers(rows, infos)))


@dataclass(frozen=True)
class Winner:
    """A commit that made writers lose.

    :param version: its version.
    :param losers: how many recorded attempts lost to it.
    :param tasks: ``(dag.task, attempts lost)`` of the tasks that lost, most first.
    :param kinds: ``(conflict kind, count)``.
    :param operation: its operation (the log's, else the one the conflict names).
    :param writer: who wrote it, when the log read or a report says.
    :param timestamp: when it was committed, when the log read says.
    """

    version: int
    losers: int
    tasks: tuple[tuple[str, int], ...]
    kinds: tuple[tuple[str, int], ...]
    operation: str
    writer: Writer | None
    timestamp: datetime | None = None


@dataclass(frozen=True)
class Winners:
    """The winners of the recorded conflicts, newest version first, and the conflicts that name none.

    :param winners: by version.
    :param unnamed: lost attempts whose conflict names no winning version.
    """

    winners: tuple[Winner, ...]
    unnamed: int = 0


def _most_first(counts: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def conflict_winners(
    reports: Sequence[Mapping[str, Any]],
    history_rows: Iterable[Mapping[str, Any]] = (),
    *,
    time_range: TimeRange | None = None,
) -> Winners:
    """The winner of every recorded conflict on the table, by version, with its losers.

    :param reports: the table's commit reports, with their tasks' ids.
    :param history_rows: the log's history, to say who wrote each winner (a version not read there is
        attributed from the reports, else left unknown).
    :param time_range: only conflicts whose losing attempt started in it; None: all.
    """
    infos = {int(r["version"]): r for r in history_rows if isinstance(r.get("version"), int)}
    committed = committed_versions(reports)
    by_version: dict[int, list[Loss]] = {}
    unnamed = 0
    for loss in losses(reports, time_range=time_range):
        if loss.version is None:
            unnamed += 1
        else:
            by_version.setdefault(loss.version, []).append(loss)
    winners = []
    for version, lost in sorted(by_version.items(), reverse=True):
        info = infos.get(version)
        if info is not None:
            writer: Writer | None = writer_of(info, committed)
            operation = str(info.get("operation") or "")
        else:
            writer = writer_of({"version": version}, committed) if version in committed else None
            operation = next((loss.operation for loss in lost if loss.operation), "")
        winners.append(
            Winner(
                version,
                len(lost),
                _most_first(Counter(loss.task for loss in lost)),
                _most_first(Counter(loss.kind for loss in lost)),
                operation,
                writer,
                commit_time(info) if info is not None else None,
            )
        )
    return Winners(tuple(winners), unnamed)


@dataclass(frozen=True)
class LeaseRow:
    """A live lease, in grant order.

    :param position: its place in the table's grant order (1: granted first).
    :param lease_id: its id.
    :param operation: the holder's operation.
    :param scope: its partitions, or ``the whole table``.
    :param holder: who holds it (``dag.task[map]/run``).
    :param granted_s: seconds since it was granted.
    :param heartbeat_s: seconds since its last heartbeat.
    :param expires_in_s: seconds until it expires without a heartbeat.
    :param behind: the positions of the writers granted before it that it will conflict with: it takes its
        turn after them (empty for maintenance, which is granted only when nothing it conflicts with is live).
    """

    position: int
    lease_id: str
    operation: str
    scope: str
    holder: str
    granted_s: float
    heartbeat_s: float
    expires_in_s: float
    behind: tuple[int, ...] = ()


def lease_rows(leases: Sequence[Lease], now: datetime) -> list[LeaseRow]:
    """The live leases of one table in grant order, each with the writers it waits behind (by the conflict
    matrix with its default engine profile and table traits, as a writer's turn is decided by default).

    :param leases: the table's live leases.
    :param now: the store's current time.
    """
    ordered = sorted(leases, key=lambda lease: (lease.acquired_at, lease.lease_id))
    rows = []
    for position, lease in enumerate(ordered, start=1):
        behind: tuple[int, ...] = ()
        if lease.op_kind not in MAINTENANCE_KINDS:
            conflicts = writer_turn_conflicts(lease.op_kind, lease.partitions, levels=FIRST_LEVELS)
            behind = tuple(
                i for i, earlier in enumerate(ordered[: position - 1], start=1) if conflicts(earlier)
            )
        rows.append(
            LeaseRow(
                position,
                lease.lease_id,
                lease.op_kind.name,
                format_scope(lease.partitions),
                lease.holder,
                (now - lease.acquired_at).total_seconds(),
                (now - lease.heartbeat_at).total_seconds(),
                (lease.expires_at - now).total_seconds(),
                behind,
            )
        )
    return rows


# -- reads: the metadata DB, the serialized DAGs, the Delta log, the lease store ---------------------------


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


def _log_location(location: str) -> str:
    """``location`` when delta-rs can open it from here, else a ValueError saying why not."""
    if not is_path(location):
        raise ValueError(
            f"{location!r} is a catalog table name: delta-rs reads the log from the table's storage location "
            "(a path or URI such as s3://bucket/orders), which only Spark's catalog knows"
        )
    if "://" not in location and local_path(location) is None and not location.startswith("file:"):
        raise ValueError(f"{location!r} is a relative path: only the Spark job knows what it is relative to")
    return location


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
    :raises Exception: whatever delta-rs raises (a missing table, refused credentials), or a ValueError for
        a location it cannot open.
    """
    from deltalake import DeltaTable

    table = DeltaTable(_log_location(location), storage_options=dict(storage_options or {}) or None)
    limit = min(2 * COMMIT_LIMIT, scan_limit)
    while True:
        rows = table.history(limit)
        if len(rows) < limit:
            return LogRead(tuple(rows), True, True)
        oldest = min((t for t in (commit_time(r) for r in rows) if t is not None), default=None)
        if (oldest is not None and oldest < since) or limit >= scan_limit:
            return LogRead(tuple(rows), oldest is not None and oldest < since, False)
        limit = min(limit * 4, scan_limit)


def redacted(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """``Type: message`` of an error, with every known secret and sensitive ``key=value`` hidden (and
    the terminal colours delta-rs puts in its messages dropped).

    :param exc: the error.
    :param secrets: secret values that may appear in it.
    """
    text = _ANSI_RE.sub("", f"{type(exc).__name__}: {exc}")
    return redact_text(text, [s for s in secrets if s])


def read_table_reports(key: str, dag_ids: Iterable[str], since: datetime) -> tuple[list[Any], bool]:
    """The commit reports of the DAGs ``dag_ids`` on the table ``key``, newest first, and whether the read was
    bounded (the newest :data:`~airflow_provider_deltacc.ui.data.REPORT_LIMIT` reports of every table).

    Those pushed since ``since`` (a conflict of the range, and the commit that won it, are reported after
    it); when none is, the newest of any time, so the table's log can still be read through its writer.

    :param key: the table's key.
    :param dag_ids: the DAGs the user may read.
    :param since: the range's start.
    """
    from airflow.utils.session import create_session

    from airflow_provider_deltacc.ui.data import read_reports

    dag_ids = list(dag_ids)
    with create_session() as session:
        reports = read_reports(session, dag_ids=dag_ids, since=since)
        found = [r for r in reports if r.table == key]
        if not found:
            reports = read_reports(session, dag_ids=dag_ids)
            found = [r for r in reports if r.table == key]
    return found, len(reports) >= REPORT_LIMIT


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


@dataclass(frozen=True)
class LeaseView:
    """The live leases of the table, or why they cannot be shown.

    :param rows: the leases in grant order.
    :param store: which store was read (its password hidden).
    :param error: why the store could not be read, else None.
    """

    rows: tuple[LeaseRow, ...] = ()
    store: str = ""
    error: str | None = None


def _sqlite_file(url: Any) -> Path | None:
    """The SQLite file a lease store URL names (None: the default file), None for another store."""
    from sqlalchemy import make_url

    from airflow_provider_deltacc.windows.sqlite_store import default_sqlite_path

    if url is None:
        return default_sqlite_path()
    if isinstance(url, str) and "://" not in url:
        return Path(url).expanduser()
    parsed = make_url(url)
    return Path(parsed.database or "") if parsed.get_backend_name() == "sqlite" else None


def _lease_store_target() -> tuple[Any, list[str]]:
    """The lease store URL as ``deltacc-leases`` resolves it without arguments (``[deltacc]
    lease_store_conn_id``, else ``$DELTACC_LEASE_STORE_URL``; None: the embedded SQLite file), and its
    secrets."""
    import os

    from sqlalchemy import make_url

    from airflow_provider_deltacc.deployment.config import configured_lease_store_conn_id
    from airflow_provider_deltacc.windows.factory import LEASE_STORE_URL_ENV

    conn_id = configured_lease_store_conn_id()
    if conn_id is not None:
        from airflow_provider_deltacc.hooks.lease_store import connection_store_url

        url = connection_store_url(conn_id)
        return url, [url.password] if isinstance(url.password, str) else []
    text = os.environ.get(LEASE_STORE_URL_ENV) or None
    try:
        password = make_url(text).password if text and "://" in text else None
    except Exception:
        password = None
    return text, [password] if isinstance(password, str) else []


def read_leases(key: str) -> LeaseView:
    """The live leases on the table ``key`` from the configured lease store; an error on the view, never an
    exception, when the store cannot be opened or read. An embedded SQLite file that does not exist is not
    created.

    :param key: the table's key.
    """
    from airflow_provider_deltacc.windows.factory import store_from_url
    from airflow_provider_deltacc.windows.sql_store import SqlLeaseStore

    secrets: list[str] = []
    try:
        url, secrets = _lease_store_target()
        sqlite = _sqlite_file(url)
        if sqlite is not None and not sqlite.is_file():
            where = f"the SQLite lease file {sqlite}"
            return LeaseView(store=where, error=f"{where} does not exist on this machine (the api-server's)")
        store = store_from_url(url, retry_timeout_s=5.0)
    except Exception as exc:
        return LeaseView(error=f"the lease store cannot be opened: {redacted(exc, secrets)}")
    try:
        if not isinstance(store, SqlLeaseStore):
            return LeaseView(store=repr(store), error=f"{store!r} is not a SQL lease store")
        rows = lease_rows(store.active(key), store.now())
        return LeaseView(tuple(rows), redact_text(repr(store), secrets))
    except Exception as exc:
        return LeaseView(
            store=redact_text(repr(store), secrets), error=f"cannot read: {redacted(exc, secrets)}"
        )
    finally:
        store.close()


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
    :data:`PAGE_READ_OPTIONS` under them)."""
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
    key = table_key(table)
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
    secrets = _url_secrets(location)
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


def _url_secrets(location: str) -> list[str]:
    """Credentials spelled into a table's URI (an abfss URI's user part is its container, not a secret)."""
    try:
        parts = urlsplit(location)
        user = parts.username if parts.scheme.lower() not in ("abfs", "abfss", "wasb", "wasbs") else None
        return [s for s in (parts.password, user) if s]
    except ValueError:
        return []
