"""Server-rendered HTML of "who is fighting over this table" (``/deltacc/table``): the commits of a range and
who wrote them, the commits that made writers lose, writers outside Airflow, and the live leases.

Every value from the log, a report, the lease store or the request is escaped (:func:`html.escape`) before
it reaches the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape

from airflow_provider_deltacc.ui.fighting import (
    COMMIT_LIMIT,
    HISTORY_SCAN_LIMIT,
    CommitRow,
    Commits,
    LeaseRow,
    LeaseView,
    OutsideWriter,
    TableView,
    Winner,
    Winners,
    Writer,
)
from airflow_provider_deltacc.ui.pages import _page, task_view_url

#: The page's path under the plugin's prefix (the conflicts page links here: ``pages.table_view_url``).
TABLE_VIEW_PATH = "/deltacc/table"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "unknown"


def _counts(pairs: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{name} x{n}" for name, n in pairs)


def _writer(writer: Writer | None) -> str:
    if writer is None:
        return "<span class='muted'>unknown (not in the log read, and no report names it)</span>"
    if writer.kind == "outside":
        label = f"<span class='retry outside'>{escape(writer.label)}</span>"
    elif writer.task is not None:
        href = escape(task_view_url(writer.task), quote=True)
        label = f"<a class='task' href='{href}'>{escape(writer.label)}</a>"
    else:
        label = f"<span class='ok'>{escape(writer.label)}</span>"
    return f"{label}<br><span class='muted'>{escape(writer.detail)}</span>"


def _range_form(view: TableView) -> str:
    since, until = view.time_range.since.isoformat(), view.time_range.until.isoformat()
    return (
        f"<form class='range' method='get' action='{TABLE_VIEW_PATH}'>"
        f"<input type='hidden' name='table' value='{escape(view.key, quote=True)}'>"
        f"<label>since <input name='since' value='{escape(since, quote=True)}' size='26'></label> "
        f"<label>until <input name='until' value='{escape(until, quote=True)}' size='26'></label> "
        "<button type='submit'>show</button>"
        " <span class='muted'>ISO dates (2026-11-20) or dates and times (2026-11-20T09:30), UTC unless they "
        "name their zone</span></form>"
    )


def _log_state(view: TableView) -> str:
    parts = []
    if view.log_error is not None:
        parts.append(f"<p class='fail log-error'>The Delta log was not read: {escape(view.log_error)}</p>")
    elif view.location is not None:
        parts.append(f"<p class='muted'>Log read through {escape(view.location)}.</p>")
    if view.commits is not None and not view.log_covers_range:
        parts.append(
            f"<p class='muted partial'>Only the newest {HISTORY_SCAN_LIMIT:,} commits of the log were read: "
            "older commits of the range are not listed.</p>"
        )
    parts += [f"<p class='muted note'>{escape(note)}</p>" for note in view.notes]
    if view.reports_bounded:
        parts.append(
            "<p class='muted bounded'>From the newest commit reports only (the read is bounded).</p>"
        )
    return "".join(parts)


def _table(css: str, headers: Sequence[str], rows: Iterable[str]) -> str:
    """A table of the page with the class ``css``, the column headers ``headers`` and ``rows`` (HTML)."""
    head = "".join(f"<th>{header}</th>" for header in headers)
    return f"<table class='{css}'><tr>{head}</tr>{''.join(rows)}</table>"


def _winner_row(w: Winner) -> str:
    return (
        f"<tr class='winner'><td>v{w.version}</td><td>{escape(_when(w.timestamp))}</td>"
        f"<td>{escape(w.operation or 'unknown')}</td><td>{_writer(w.writer)}</td><td>{w.losers}</td>"
        f"<td>{escape(_counts(w.tasks))}</td><td>{escape(_counts(w.kinds))}</td></tr>"
    )


def _winners(winners: Winners) -> str:
    if not winners.winners:
        body = "<p>No recorded conflict lost in this range.</p>"
    else:
        headers = (
            "version",
            "committed",
            "operation",
            "written by",
            "writers lost",
            "tasks that lost",
            "conflicts",
        )
        body = _table("winners", headers, map(_winner_row, winners.winners))
    if winners.unnamed:
        body += f"<p class='muted'>{winners.unnamed} lost attempts name no winning version.</p>"
    return "<h2>Commits that made writers lose</h2>" + body


def _outside(commits: Commits | None) -> str:
    head = "<h2>Writers outside Airflow</h2>"
    if commits is None:
        return head + "<p class='muted'>Unknown: the log was not read.</p>"
    if not commits.outside:
        return head + "<p>No commit in this range was written outside Airflow.</p>"
    return head + _table("outside", ("writer", "commits", "operations"), map(_outside_row, commits.outside))


def _outside_row(writer: OutsideWriter) -> str:
    return (
        f"<tr class='outside-writer'><td>{escape(writer.who)}</td><td>{writer.commits}</td>"
        f"<td>{escape(_counts(writer.operations))}</td></tr>"
    )


def _leases(leases: LeaseView) -> str:
    head = "<h2>Live leases and turns</h2>"
    where = f"<p class='muted'>Lease store: {escape(leases.store)}.</p>" if leases.store else ""
    if leases.error is not None:
        return head + where + f"<p class='fail lease-error'>{escape(leases.error)}</p>"
    if not leases.rows:
        return head + where + "<p>No live lease on this table.</p>"
    order = (
        "<p class='muted'>In grant order: the order in which writers take their turns. A writer goes after "
        "the writers granted before it that it will conflict with.</p>"
    )
    headers = ("#", "operation", "partitions", "holder", "granted", "heartbeat", "expires in", "turn after")
    return head + where + order + _table("leases", headers, map(_lease_row, leases.rows))


def _lease_row(r: LeaseRow) -> str:
    return (
        f"<tr class='lease'><td>{r.position}</td><td>{escape(r.operation)}</td><td>{escape(r.scope)}</td>"
        f"<td>{escape(r.holder)}</td><td>{r.granted_s:.0f} s ago</td><td>{r.heartbeat_s:.0f} s ago</td>"
        f"<td>{r.expires_in_s:.0f} s</td><td>{escape(', '.join(f'#{p}' for p in r.behind) or '-')}</td></tr>"
    )


def _commit_row(row: CommitRow) -> str:
    lost = f"<span class='fail'>{row.losers}</span>" if row.losers else ""
    return (
        f"<tr class='commit {escape(row.writer.kind)}'><td>v{row.version}</td>"
        f"<td>{escape(_when(row.timestamp))}</td>"
        f"<td>{escape(row.operation)}</td><td class='reason'>{escape(row.parameters)}</td>"
        f"<td>{_writer(row.writer)}</td><td>{lost}</td></tr>"
    )


def _commits(commits: Commits | None) -> str:
    head = "<h2>Commits</h2>"
    if commits is None:
        return head + "<p class='muted'>The log was not read.</p>"
    if not commits.rows:
        return head + "<p>No commit in this range.</p>"
    bounded = (
        f"<p class='muted bounded'>The range holds {commits.in_range:,} commits: the newest "
        f"{len(commits.rows):,} are listed (at most {COMMIT_LIMIT:,}).</p>"
        if commits.bounded
        else ""
    )
    headers = ("version", "committed", "operation", "parameters", "written by", "writers it made lose")
    return head + bounded + _table("commits", headers, map(_commit_row, commits.rows))


def fighting_page(view: TableView) -> str:
    """The "who is fighting over this table" page.

    :param view: what was read (see :func:`~airflow_provider_deltacc.ui.fighting.view.table_view`).
    """
    summary = (
        f"<p>From {escape(_when(view.time_range.since))} to {escape(_when(view.time_range.until))}; "
        f"{view.reports} commit reports of DAGs you may read name this table.</p>"
    )
    body = [
        summary,
        _range_form(view),
        _log_state(view),
        _winners(view.winners),
        _outside(view.commits),
        _leases(view.leases),
        _commits(view.commits),
    ]
    return _page(f"Who is fighting over {view.key}", "".join(body))
