"""Server-rendered HTML of the Delta conflicts view: an inline SVG chart per table, tables of tries.

Every value from a report or the metadata DB is escaped (:func:`html.escape`) before it reaches the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.ui.aggregate import TaskWaits, ViewSummary
from airflow_provider_deltacc.ui.data import Bucket, TryRow
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.pairs import ConflictPair

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1a202c}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem}
table{border-collapse:collapse;margin:.5rem 0;width:100%}
th,td{border:1px solid #cbd5e0;padding:.3rem .5rem;text-align:left;vertical-align:top;font-size:.9rem}
th{background:#edf2f7}td.reason{white-space:normal;max-width:60rem}
.retry{color:#c05621;font-weight:600}.fail{color:#c53030;font-weight:600}.ok{color:#2f855a;font-weight:600}
.legend span{margin-right:1rem}.muted{color:#718096}
form.filters label{margin-right:.8rem}.pager a{margin-left:.8rem}
"""
_COLOURS = {"commits": "#38a169", "conflicts": "#e53e3e", "retries": "#dd6b20"}


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>"
    )


def error_page(title: str, message: str) -> str:
    """A page that says what was wrong with the request."""
    return _page(title, f"<p class='error'>{escape(message)}</p>")


def chart_svg(table: str, buckets: Sequence[Bucket]) -> str:
    """Bars per day: commits, conflicts and Airflow retries side by side; wasted seconds as a label."""
    width_per_day, height, top = 72, 160, 20
    peak = max([1, *(max(b.commits, sum(b.conflicts.values()), b.retries) for b in buckets)])
    width = max(320, 40 + width_per_day * len(buckets))
    parts = [
        f"<svg class='deltacc-chart' data-table='{escape(table, quote=True)}' role='img' "
        f"aria-label='commits, conflicts and retries per day on {escape(table, quote=True)}' "
        f"width='{width}' height='{height + 72}' xmlns='http://www.w3.org/2000/svg'>",
        f"<line x1='30' y1='{top + height}' x2='{width}' y2='{top + height}' stroke='#a0aec0'/>",
    ]
    for i, bucket in enumerate(buckets):
        x = 36 + i * width_per_day
        values = (
            ("commits", bucket.commits),
            ("conflicts", sum(bucket.conflicts.values())),
            ("retries", bucket.retries),
        )
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(bucket.conflicts.items()))
        for j, (name, value) in enumerate(values):
            bar = round(height * value / peak)
            detail = f" ({kinds})" if name == "conflicts" and kinds else ""
            parts.append(
                f"<rect class='bar {name}' x='{x + j * 18}' y='{top + height - bar}' width='16' "
                f"height='{bar}' fill='{_COLOURS[name]}'>"
                f"<title>{escape(bucket.day)}: {value} {name}{escape(detail)}</title></rect>"
            )
        parts.append(
            f"<text x='{x}' y='{top + height + 16}' font-size='10'>{escape(bucket.day[5:])}</text>"
            f"<text x='{x}' y='{top + height + 30}' font-size='10' fill='#718096'>"
            f"{bucket.wasted_s:.1f} s wasted</text>"
            f"<text x='{x}' y='{top + height + 44}' font-size='10' fill='#718096'>"
            f"{bucket.waited_s:.1f} s waited</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _legend() -> str:
    items = "".join(f"<span style='color:{c}'>&#9632; {escape(n)}</span>" for n, c in _COLOURS.items())
    note = (
        "per day; wasted = work thrown away by lost attempts; waited = time writers waited for their turn "
        "behind writers they would have lost to"
    )
    return f"<p class='legend'>{items}<span class='muted'>{note}</span></p>"


def _waiting_hint(buckets: Sequence[Bucket]) -> str:
    """Where writers spent longer waiting for their turn than the work they lost: say what would let them run
    side by side."""
    waited, wasted = sum(b.waited_s for b in buckets), sum(b.wasted_s for b in buckets)
    if waited <= 0 or waited < wasted:
        return ""
    return (
        "<p class='muted waiting'>Writers here wait for each other more than they lose: pinning each write "
        "to its partitions (partition_pin) or staging appends and merging once (staging_append_then_merge) "
        "lets them run side by side.</p>"
    )


def _decision(decision: str | None, status: str) -> str:
    if decision == "retry":
        return "<span class='retry'>RETRY</span>"
    if decision == "fail":
        return "<span class='fail'>FAIL</span>"
    if status in ("committed", "skipped_duplicate"):
        return f"<span class='ok'>{escape(status)}</span>"
    return escape(status or "")


def attempts_text(row: TryRow) -> str:
    """``attempt 1 of 5: APPEND [p=a] (winner: WRITE v3), wasted 0.4 s; attempt 2 of 5: committed``."""
    limit = row.max_attempts or len(row.attempts)
    parts = []
    for attempt in row.attempts:
        conflict = attempt.get("conflict")
        if isinstance(conflict, Mapping):
            what = str(conflict.get("kind", "")).upper()
            if conflict.get("partition"):
                what += f" {conflict['partition']}"
            winner = " ".join(
                str(p)
                for p in (
                    conflict.get("winning_operation"),
                    f"v{conflict['winning_version']}"
                    if conflict.get("winning_version") is not None
                    else None,
                )
                if p
            )
            if winner:
                what += f" (winner: {winner})"
            what += f", wasted {float(attempt.get('wasted_s') or 0.0):.1f} s"
        else:
            what = str(attempt.get("outcome") or "")
        parts.append(f"attempt {attempt.get('number')} of {limit}: {what}")
    return "; ".join(parts)


def task_view_url(row: TryRow | Mapping[str, Any]) -> str:
    """The per-task-instance view's path (under the plugin's prefix)."""
    get = row.get if isinstance(row, Mapping) else lambda k: getattr(row, k)
    return (
        f"/deltacc/task-instance/{quote(str(get('dag_id')), safe='')}/{quote(str(get('run_id')), safe='')}"
        f"/{quote(str(get('task_id')), safe='')}/{get('map_index')}"
    )


def _tries_table(rows: Sequence[TryRow], *, with_task: bool) -> str:
    head = "<th>task instance</th>" if with_task else ""
    lines = [
        f"<table class='tries'><tr>{head}<th>try</th><th>outcome</th><th>attempts</th>"
        "<th>wasted</th><th>waited for its turn</th><th>reason</th></tr>"
    ]
    for row in rows:
        task = ""
        if with_task:
            label = f"{row.dag_id}.{row.task_id}" + (f"[{row.map_index}]" if row.map_index >= 0 else "")
            task = (
                f"<td><a href='{escape(task_view_url(row), quote=True)}'>{escape(label)}</a>"
                f"<br><span class='muted'>{escape(row.run_id)}</span></td>"
            )
        lines.append(
            f"<tr class='try'>{task}<td>try {row.try_number}</td>"
            f"<td>{_decision(row.decision, row.status)}</td>"
            f"<td>{escape(attempts_text(row))}</td><td>{row.wasted_s:.1f} s</td><td>{row.waited_s:.1f} s</td>"
            f"<td class='reason'>{escape(row.reason or '')}</td></tr>"
        )
    lines.append("</table>")
    return "".join(lines)


def _filter_form(filters: ViewFilters, table_names: Sequence[str], dag_ids: Sequence[str]) -> str:
    def options(chosen: str | None, values: Sequence[str], every: str) -> str:
        items = [f"<option value=''>{escape(every)}</option>"]
        for value in values:
            picked = " selected" if value == chosen else ""
            items.append(f"<option value='{escape(value, quote=True)}'{picked}>{escape(value)}</option>")
        return "".join(items)

    chosen_table = table_key(Table(filters.table)) if filters.table else None
    return (
        "<form class='filters' method='get'>"
        f"<label>table <select name='table'>{options(chosen_table, table_names, 'every table')}"
        "</select></label> "
        f"<label>DAG <select name='dag_id'>{options(filters.dag_id, dag_ids, 'every DAG')}</select></label> "
        f"<label>from <input type='date' name='since' value='{filters.since.date().isoformat()}'></label> "
        f"<label>to <input type='date' name='until' value='{_last_day(filters)}'></label> "
        "<button type='submit'>Show</button></form>"
    )


def _last_day(filters: ViewFilters) -> str:
    """The last day the range covers (``until`` is exclusive)."""
    return (filters.until - timedelta(microseconds=1)).date().isoformat()


def table_view_url(table: str, filters: ViewFilters) -> str:
    """The "who is fighting over this table" view of ``table`` over the range of ``filters``."""
    since, until = filters.since.isoformat(), filters.until.isoformat()
    return f"/deltacc/table?{urlencode({'table': table, 'since': since, 'until': until})}"


def _waits_table(waits: Sequence[TaskWaits], limit: int = 10) -> str:
    if not waits:
        return ""
    lines = [
        "<table class='waits'><tr><th>task</th><th>tries</th><th>commits</th><th>conflicts</th>"
        "<th>wasted</th><th>waited for its first turn</th><th>waited for its turn after a conflict</th></tr>"
    ]
    for w in waits[:limit]:
        lines.append(
            f"<tr class='task-waits'><td>{escape(w.dag_id)}.{escape(w.task_id)}</td><td>{w.tries}</td>"
            f"<td>{w.commits}</td><td>{w.conflicts}</td><td>{w.times.wasted_s:.1f} s</td>"
            f"<td>{w.times.first_turn_wait_s:.1f} s</td><td>{w.times.turn_wait_s:.1f} s</td></tr>"
        )
    lines.append("</table>")
    more = f"<p class='muted'>{len(waits) - limit} more tasks.</p>" if len(waits) > limit else ""
    return "".join(lines) + more


def _pager(filters: ViewFilters, total: int) -> str:
    pages = max(1, -(-total // filters.per_page))
    links = []
    for name, page, shown in (("prev", filters.page - 1, "newer"), ("next", filters.page + 1, "older")):
        if 1 <= page <= pages:
            href = escape(f"?{filters.query_string(page=page)}", quote=True)
            links.append(f"<a class='{name}' href='{href}'>{shown}</a>")
    return (
        f"<p class='pager'>page {filters.page} of {pages} ({total:,} tries with a retry decision) "
        f"{' '.join(links)}</p>"
    )


def conflicts_page(
    summary: ViewSummary, pairs: Sequence[ConflictPair], filters: ViewFilters, dag_ids: Sequence[str]
) -> str:
    """The "Delta conflicts" page for one request.

    :param summary: what the reports of the request add up to.
    :param pairs: the task pairs that conflict most.
    :param filters: the request (for the form, the links and the pager).
    :param dag_ids: the DAGs the user may read (the DAG filter's choices).
    """
    body = [_filter_form(filters, summary.table_names, dag_ids), _legend()]
    body.append(
        f"<p class='muted range'>Reports pushed from {escape(filters.since.strftime('%Y-%m-%d %H:%M'))} to "
        f"{escape(filters.until.strftime('%Y-%m-%d %H:%M'))} UTC.</p>"
    )
    if summary.bounded is not None:
        body.append(f"<p class='muted bounded'>From the newest {summary.bounded:,} commit reports.</p>")
    if not summary.tables:
        body.append("<p>No Delta commit reports yet.</p>")
    for table, buckets in summary.tables.items():
        total_conflicts = sum(sum(b.conflicts.values()) for b in buckets)
        kinds: dict[str, int] = {}
        for b in buckets:
            for k, n in b.conflicts.items():
                kinds[k] = kinds.get(k, 0) + n
        by_kind = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "none"
        fighting = (
            f" <a class='fighting' href='{escape(table_view_url(table, filters), quote=True)}'>"
            "who is fighting over this table</a>"
            if table
            else ""
        )
        body.append(
            f"<section class='table'><h2>{escape(table)}</h2><p>"
            f"{sum(b.commits for b in buckets)} commits, {total_conflicts} conflicts ({escape(by_kind)}), "
            f"{sum(b.retries for b in buckets)} Airflow retries, "
            f"{sum(b.wasted_s for b in buckets):.1f} s wasted, "
            f"{sum(b.waited_s for b in buckets):.1f} s waited for turns{fighting}</p>{_waiting_hint(buckets)}"
            f"{chart_svg(table, buckets)}{_waits_table(summary.tasks.get(table, []))}</section>"
        )
    body.append("<h2>Retry decisions and reasons</h2>")
    if summary.decisions:
        body.append(_tries_table(summary.decisions, with_task=True) + _pager(filters, summary.decision_count))
    else:
        body.append("<p>No failed tries.</p>")
    body.append("<h2>Task pairs that conflict most</h2>")
    if pairs:
        rows = "".join(
            f"<tr class='pair'><td>{escape(p.table)}</td><td>{escape(p.loser)}</td>"
            f"<td>{escape(p.winner)}</td>"
            f"<td>{p.conflicts} ({escape(p.kinds)})</td><td>{escape(p.fix)}</td></tr>"
            for p in pairs
        )
        body.append(
            "<table class='pairs'><tr><th>table</th><th>task</th><th>conflicts with</th><th>conflicts</th>"
            f"<th>suggested fix</th></tr>{rows}</table>"
        )
    else:
        body.append("<p>No conflicts between tasks.</p>")
    return _page("Delta conflicts", "".join(body))


def task_page(title: str, rows: Sequence[TryRow], states: Mapping[int, str]) -> str:
    """The per-task-instance view: every try, its attempts and its reason."""
    if not rows:
        return _page(title, "<p>This task instance has no Delta commit report.</p>")
    listed = {r.try_number for r in rows}
    missing = [n for n in sorted(states) if n not in listed]
    note = (
        f"<p class='muted'>Tries without a report (they ended before the job ran): {escape(str(missing))}</p>"
        if missing
        else ""
    )
    return _page(title, _tries_table(rows, with_task=False) + note)
