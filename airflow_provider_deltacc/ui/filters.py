"""What the Delta conflicts page is asked for: table, DAG, time range and page, read from its query string.

A bad value is the user's mistake: :class:`ViewInputError` names the parameter, the value and the form it
takes, and the page answers 400 with that message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

from airflow_provider_deltacc.contract.exceptions import ViewInputError

__all__ = [
    "DEFAULT_DAYS",
    "PAGE_SIZE",
    "TimeRange",
    "ViewFilters",
    "parse_when",
    "time_range",
]

#: The time range a page shows when it is not given one.
DEFAULT_DAYS = 7
#: The tries with a retry decision listed per page, unless asked for (up to MAX_PAGE_SIZE).
PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def parse_when(name: str, value: str, *, end_of_day: bool = False) -> datetime:
    """``value`` as an aware UTC datetime: ``2026-11-20`` (that day's start, or with ``end_of_day`` the next
    day's start) or an ISO datetime (``2026-11-20T09:30``, UTC unless it names its zone).

    :raises ViewInputError: naming ``name`` when ``value`` is neither.
    """
    text = value.strip()
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        start = datetime.combine(day, time(), tzinfo=UTC)
        return start + timedelta(days=1) if end_of_day else start
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ViewInputError(
            name,
            value,
            "not a date or a time: give an ISO date (2026-11-20) or date and time (2026-11-20T09:30, UTC "
            "unless it names its zone)",
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _count(name: str, value: str, *, most: int | None = None) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1 or (most is not None and number > most):
        upto = f" up to {most}" if most is not None else " or more"
        raise ViewInputError(name, value, f"not a number the view takes: give 1{upto}")
    return number


@dataclass(frozen=True)
class TimeRange:
    """``[since, until)`` in UTC."""

    since: datetime
    until: datetime

    def contains(self, when: datetime | None) -> bool:
        """Whether ``when`` (aware) falls in the range; an unknown time never does."""
        return when is not None and self.since <= when < self.until


def time_range(since: str | None, until: str | None, *, default: timedelta, now: datetime) -> TimeRange:
    """The range a view's ``since`` and ``until`` ask for (:func:`parse_when`): a date alone is its midnight
    (UTC) for ``since`` and the end of that day for ``until``, so ``since=2026-11-20&until=2026-11-20`` is
    that whole day. Left out: ``until`` is ``now``, ``since`` is ``default`` before ``until``.

    :raises ViewInputError: naming the parameter that cannot be read, or ``since`` when it is not before
        ``until``.
    """
    since_text, until_text = (since or "").strip(), (until or "").strip()
    end = parse_when("until", until_text, end_of_day=True) if until_text else now
    start = parse_when("since", since_text) if since_text else end - default
    if start >= end:
        raise ViewInputError(
            "since",
            since_text or start.isoformat(),
            f"not before until={until_text or end.isoformat()!r}: give a range that starts before it ends",
        )
    return TimeRange(start, end)


@dataclass(frozen=True)
class ViewFilters:
    """One request of the conflicts page.

    :param since: from (inclusive), UTC.
    :param until: to (exclusive), UTC.
    :param table: only this table (any spelling; compared by its key), or None for every table.
    :param dag_id: only this DAG, or None for every DAG the user may read.
    :param page: which page of retry decisions, from 1.
    :param per_page: how many retry decisions a page lists.
    """

    since: datetime
    until: datetime
    table: str | None = None
    dag_id: str | None = None
    page: int = 1
    per_page: int = PAGE_SIZE

    @classmethod
    def from_query(cls, query: Mapping[str, str], *, now: datetime | None = None) -> ViewFilters:
        """Read the page's query string (``since``, ``until``, ``table``, ``dag_id``, ``page``,
        ``per_page``); what is left out is the last :data:`DEFAULT_DAYS` days, every table and DAG, the
        first :data:`PAGE_SIZE` decisions.

        :raises ViewInputError: naming the parameter that cannot be read.
        """
        default, now = timedelta(days=DEFAULT_DAYS), now or datetime.now(UTC)
        window = time_range(query.get("since"), query.get("until"), default=default, now=now)
        page_text, per_page_text = (query.get("page") or "").strip(), (query.get("per_page") or "").strip()
        return cls(
            since=window.since,
            until=window.until,
            table=(query.get("table") or "").strip() or None,
            dag_id=(query.get("dag_id") or "").strip() or None,
            page=_count("page", page_text) if page_text else 1,
            per_page=_count("per_page", per_page_text, most=MAX_PAGE_SIZE) if per_page_text else PAGE_SIZE,
        )

    def query_string(self, **changes: object) -> str:
        """This request as a query string, with ``changes`` (e.g. ``page=2``) applied."""
        chosen = replace(self, **changes)  # type: ignore[arg-type]
        params = {
            "since": chosen.since.isoformat(),
            "until": chosen.until.isoformat(),
            "table": chosen.table or "",
            "dag_id": chosen.dag_id or "",
            "page": str(chosen.page),
            "per_page": str(chosen.per_page) if chosen.per_page != PAGE_SIZE else "",
        }
        return urlencode({k: v for k, v in params.items() if v})
