"""What the Delta conflicts page and the per-task view show for given reports and history."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from airflow_provider_deltacc.ui.aggregate import summary_from_reports
from airflow_provider_deltacc.ui.data import TaskReport, buckets_by_table, try_rows
from airflow_provider_deltacc.ui.filters import ViewFilters
from airflow_provider_deltacc.ui.pages import attempts_text, conflicts_page, task_page, task_view_url
from airflow_provider_deltacc.ui.pairs import ConflictPair
from tests.support.commit_reports import committed_try, final_report, lost_try, retried_then_committed

pytestmark = pytest.mark.unit

ORDERS = "/lake/orders"
START = datetime(2026, 11, 20, 9, tzinfo=UTC).timestamp()
DAY = 86400.0


def _text(html: str) -> str:
    """The page's visible text, tags dropped and whitespace collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


FILTERS = ViewFilters.from_query({"since": "2026-11-01", "until": "2026-11-30"})


def _page_of(
    reports: list[TaskReport], pairs: Sequence[ConflictPair] = (), *, bounded: int | None = None
) -> str:
    """The page of ``reports`` (every try with a decision listed), as read without a JSON database."""
    summary = summary_from_reports(reports, FILTERS)
    summary.bounded = bounded
    return conflicts_page(summary, pairs, FILTERS, sorted({r.dag_id for r in reports}))


def _retried(task_id: str = "merge", started_at: float = START) -> tuple[TaskReport, str]:
    report, reason = retried_then_committed(ORDERS, started_at=started_at, version=5)
    return TaskReport("orders", "run_1", task_id, -1, report), reason


def test_the_conflicts_page_shows_per_table_totals_a_chart_per_day_and_every_retry_with_its_reason() -> None:
    first, reason = _retried("merge", START)
    second, _ = _retried("merge_eu", START + DAY)
    plain = TaskReport(
        "orders",
        "run_1",
        "append",
        -1,
        final_report((committed_try(ORDERS, started_at=START, version=2), None)),
    )
    reports = [first, second, plain]
    html = _page_of(reports)
    text = _text(html)

    assert f"{ORDERS} 3 commits, 2 conflicts (APPEND x2), 2 Airflow retries, 1.0 s wasted" in text
    svg = re.search(r"<svg class='deltacc-chart' data-table='/lake/orders'.*?</svg>", html)
    assert svg is not None
    assert svg.group(0).count("class='bar commits'") == 2  # two days, one bar of each series per day
    assert "<title>2026-11-20: 2 commits</title>" in svg.group(0)
    assert "<title>2026-11-21: 1 conflicts (APPEND x1)</title>" in svg.group(0)  # the kinds of the day
    assert "0.5 s wasted" in svg.group(0)
    tries = re.findall(r"<tr class='try'>.*?</tr>", html)
    assert len(tries) == 2  # only the failed tries, with the task that links to its view
    assert "href='/deltacc/task-instance/orders/run_1/merge/-1'" in tries[0]
    assert "RETRY" in tries[0] and reason.split(";")[0] in _text(tries[0])
    assert "attempt 1 of 1: APPEND [p=a] (winner: WRITE v4), wasted 0.5 s" in _text(tries[0])
    assert "No conflicts between tasks." in text


def test_the_conflicts_page_without_reports_says_so() -> None:
    text = _text(_page_of([]))
    assert "No Delta commit reports yet." in text and "No failed tries." in text
    assert "From the newest" not in text


def test_a_page_that_read_only_the_newest_reports_says_how_many() -> None:
    task, _ = _retried()
    text = _text(_page_of([task], bounded=2000))
    assert "From the newest 2,000 commit reports." in text


def test_the_pairs_table_lists_loser_winner_count_and_fix() -> None:
    pair = ConflictPair(ORDERS, "orders.merge", "orders.append", 3, "APPEND x3", "Pin the merge.", "advisor")
    html = _page_of([], [pair])
    rows = re.findall(r"<tr class='pair'>(.*?)</tr>", html)
    assert [_text(r).strip() for r in rows] == [
        f"{ORDERS} orders.merge orders.append 3 (APPEND x3) Pin the merge."
    ]


def test_values_from_reports_are_escaped() -> None:
    hostile = "/lake/<script>alert(1)</script>"
    report = final_report((lost_try(hostile, started_at=START), None))
    task = TaskReport(
        "d'x", "r<1>", "t", -1, {**report, "tries": [{**report["tries"][0], "decision": "fail"}]}
    )
    html = _page_of([task])
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "d&#x27;x" in html and "r%3C1%3E" in html  # label escaped; the link's path segment quoted


def test_the_task_view_lists_every_try_and_names_tries_that_left_no_report() -> None:
    task, reason = _retried()
    rows = try_rows(task)
    html = task_page(
        "Delta commit report: orders.merge, run_1", rows, {1: "up_for_retry", 2: "success", 3: "x"}
    )
    tries = [_text(r).strip() for r in re.findall(r"<tr class='try'>(.*?)</tr>", html)]
    assert tries[0].startswith(
        "try 1 RETRY attempt 1 of 1: APPEND [p=a] (winner: WRITE v4), wasted 0.5 s 0.5 s"
    )
    assert tries[0].endswith(reason)
    assert tries[1] == "try 2 committed attempt 1 of 1: committed 0.0 s 0.0 s"  # wasted, waited
    assert "Tries without a report (they ended before the job ran): [3]" in _text(html)
    assert "This task instance has no Delta commit report." in _text(task_page("t", [], {}))


def test_attempts_read_attempt_n_of_m_and_task_view_urls_quote_their_ids() -> None:
    task, _ = _retried()
    (lost_row, committed_row) = try_rows(task)
    assert attempts_text(committed_row) == "attempt 1 of 1: committed"
    assert (
        task_view_url(
            {"dag_id": "d", "run_id": "manual__2026-11-20T00:00:00+00:00", "task_id": "g.t", "map_index": 3}
        )
        == "/deltacc/task-instance/d/manual__2026-11-20T00%3A00%3A00%2B00%3A00/g.t/3"
    )
    assert task_view_url(lost_row) == "/deltacc/task-instance/orders/run_1/merge/-1"


def _waited_report(first_turn_s: float, turn_wait_s: float, wasted_s: float) -> TaskReport:
    attempts = [
        {"number": 1, "started_at": START, "outcome": "conflict", "conflict": {"kind": "APPEND"}},
        {"number": 2, "started_at": START + 1, "outcome": "committed"},
    ]
    attempts[0].update(wasted_s=wasted_s, turn_wait_s=turn_wait_s)
    one_try = {
        "try_number": 1,
        "status": "committed",
        "first_turn_wait_s": first_turn_s,
        "attempts": attempts,
    }
    return TaskReport("orders", "run_1", "merge", -1, {"table": ORDERS, **one_try, "tries": [one_try]})


def test_waiting_for_turns_is_shown_per_table_day_and_try() -> None:
    task = _waited_report(first_turn_s=30.0, turn_wait_s=4.5, wasted_s=1.0)
    [bucket] = buckets_by_table([task])[ORDERS]
    assert bucket.waited_s == pytest.approx(34.5)
    text = _text(_page_of([task]))
    assert (
        f"{ORDERS} 1 commits, 1 conflicts (APPEND x1), 0 Airflow retries, 1.0 s wasted, 34.5 s waited" in text
    )
    assert "34.5 s waited" in text and "pinning each write to its partitions" in text
    [row] = try_rows(task)
    assert row.waited_s == pytest.approx(34.5)
    html = task_page("Delta commit report: orders.merge, run_1", [row], {1: "success"})
    [line] = [_text(r).strip() for r in re.findall(r"<tr class='try'>(.*?)</tr>", html)]
    assert line.endswith("wasted 1.0 s; attempt 2 of 2: committed 1.0 s 34.5 s"), line


def test_no_hint_where_writers_lose_more_than_they_wait() -> None:
    text = _text(_page_of([_waited_report(0.0, 0.5, wasted_s=5.0)]))
    assert "0.5 s waited for turns" in text and "pinning each write" not in text


def test_each_table_lists_its_tasks_waits_and_links_who_is_fighting_over_it() -> None:
    waiting = _waited_report(first_turn_s=30.0, turn_wait_s=4.5, wasted_s=1.0)
    retried, _ = _retried("merge_eu")
    html = _page_of([waiting, retried])
    rows = [_text(r).strip() for r in re.findall(r"<tr class='task-waits'>(.*?)</tr>", html)]
    assert rows == ["orders.merge 1 1 1 1.0 s 30.0 s 4.5 s", "orders.merge_eu 2 1 1 0.5 s 0.0 s 0.0 s"]
    link = re.search(r"<a class='fighting' href='([^']+)'", html)
    assert link is not None
    assert link.group(1).startswith("/deltacc/table?table=%2Flake%2Forders&amp;since=2026-11-01")


def test_the_retry_decisions_are_paged_with_links_that_keep_the_filters() -> None:
    reports = [_retried(f"merge_{n}")[0] for n in range(7)]
    filters = ViewFilters.from_query(
        {"since": "2026-11-01", "until": "2026-11-30", "table": ORDERS, "per_page": "3", "page": "2"}
    )
    html = conflicts_page(summary_from_reports(reports, filters), [], filters, ["orders"])
    assert len(re.findall(r"<tr class='try'>", html)) == 3
    assert "page 2 of 3 (7 tries with a retry decision)" in _text(html)
    links = dict(re.findall(r"<a class='(prev|next)' href='\?([^']+)'", html))
    assert set(links) == {"prev", "next"}
    assert "page=1" in links["prev"] and "page=3" in links["next"]
    assert all("per_page=3" in q and "table=%2Flake%2Forders" in q for q in links.values())
    assert "<option value='/lake/orders' selected>" in html
