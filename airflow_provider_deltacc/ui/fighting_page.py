"""Server-rendered HTML of "who is fighting over this table" (``/deltacc/table``): the commits of a range and
who wrote them, the commits that made writers lose, writers outside Airflow, and the live leases.

Every value from the log, a report, the lease store or the request is escaped (:func:`html.escape`) before
it reaches the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from airflow_provider_deltacc.ui.fighting import (
    COMMIT_LIMIT,
    HISTORY_SCAN_LIMIT,
    CommitRow,
    Commits,
    LeaseView,
    OutsideWriter,
    TableView,
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


def _winners(winners: Winners) -> str:
    if not winners.winners:
        body = "<p>No recorded conflict lost in this range.</p>"
    else:
        rows = "".join(
            f"<tr class='winner'><td>v{w.version}</td><td>{escape(_when(w.timestamp))}</td>"
            f"<td>{escape(w.operation or 'unknown')}</td><td>{_writer(w.writer)}</td><td>{w.losers}</td>"
            f"<td>{escape(_counts(w.tasks))}</td><td>{escape(_counts(w.kinds))}</td></tr>"
            for w in winners.winners
        )
        body = (
            "<table class='winners'><tr><th>version</th><th>committed</th><th>operation</th>"
            "<th>written by</th><th>writers lost</th><th>tasks that lost</th><th>conflicts</th></tr>"
            f"{rows}</table>"
        )
    if winners.unnamed:
        body += f"<p class='muted'>{winners.unnamed} lost attempts name no winning version.</p>"
    return "<h2>Commits that made writers lose</h2>" + body


def _outside(commits: Commits | None) -> str:
    head = "<h2>Writers outside Airflow</h2>"
    if commits is None:
        return head + "<p class='muted'>Unknown: the log was not read.</p>"
    if not commits.outside:
        return head + "<p>No commit in this range was written outside Airflow.</p>"
    rows = "".join(_outside_row(w) for w in commits.outside)
    return (
        head
        + f"<table class='outside'><tr><th>writer</th><th>commits</th><th>operations</th></tr>{rows}</table>"
    )


def _outside_row(writer: OutsideWriter) -> str:
    return (
        f"<tr class='outside-writer'><td>{escape(writer.who)}</td><td>{writer.commits}</td>"
        f"<td>{escape(_counts(writer.operations))}</td></tr>"
    )


def _leases(leases: LeaseView) -> str:
    head = "<h2>Live leases and queues</h2>"
    where = f"<p class='muted'>Lease store: {escape(leases.store)}.</p>" if leases.store else ""
    if leases.error is not None:
        return head + where + f"<p class='fail lease-error'>{escape(leases.error)}</p>"
    if not leases.rows:
        return head + where + "<p>No live lease on this table.</p>"
    rows = "".join(
        f"<tr class='lease'><td>{r.position}</td><td>{escape(r.operation)}</td><td>{escape(r.scope)}</td>"
        f"<td>{escape(r.holder)}</td><td>{r.granted_s:.0f} s ago</td><td>{r.heartbeat_s:.0f} s ago</td>"
        f"<td>{r.expires_in_s:.0f} s</td><td>{escape(', '.join(f'#{p}' for p in r.behind) or '-')}</td></tr>"
        for r in leases.rows
    )
    return (
        head
        + where
        + "<p class='muted'>In grant order: the order in which writers take their turns. A writer goes after "
        "the writers granted before it that it will conflict with.</p>"
        "<table class='leases'><tr><th>#</th><th>operation</th><th>partitions</th><th>holder</th>"
        f"<th>granted</th><th>heartbeat</th><th>expires in</th><th>turn after</th></tr>{rows}</table>"
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
    rows = "".join(_commit_row(r) for r in commits.rows)
    return (
        head
        + bounded
        + "<table class='commits'><tr><th>version</th><th>committed</th><th>operation</th><th>parameters</th>"
        f"<th>written by</th><th>writers it made lose</th></tr>{rows}</table>"
    )


def fighting_page(view: TableView) -> str:
    """The "who is fighting over this table" page.

    :param view: what was read (see :func:`~airflow_provider_deltacc.ui.fighting.table_view`).
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
