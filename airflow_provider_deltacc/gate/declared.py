"""Declared write windows: known ingestion schedules during which a table is being written.

A window is either recurring (a cron expression plus a duration, evaluated in the window's time zone)
or one explicit interval (start and end). Overlapping or back-to-back occurrences of a recurring window
merge into one busy period, so :meth:`WriteWindow.active_at` reports when writing really stops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from airflow_provider_deltacc.contract.exceptions import refuse_renamed
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.leases.clock import require_aware
from airflow_provider_deltacc.leases.lease import parse_op_kind
from airflow_provider_deltacc.leases.partitions import PartitionScope, format_scope, normalize_scope

#: How long a chain of touching occurrences may last before the window is called endless.
MAX_BUSY = timedelta(days=8)

_EPSILON = timedelta(microseconds=1)
#: A window's fields by their names before the rename -> their names now.
_RENAMED = {"partitions": "partition_values"}


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"timezone={name!r} is not an IANA time zone; use a name such as 'UTC' or 'Europe/Berlin'"
        ) from None


def _as_utc(value: datetime, zone: ZoneInfo) -> datetime:
    # A naive explicit start/end is read in the window's own time zone, like the cron.
    return (value.replace(tzinfo=zone) if value.tzinfo is None else value).astimezone(UTC)


@dataclass(frozen=True, init=False)
class WriteWindow:
    """A declared window during which writers of ``op_kind`` work on ``table``.

    Give either ``cron`` and ``duration`` (recurring) or ``start`` and ``end`` (one interval).

    :param table: the Delta table's name or path, spelled as the leases spell it.
    :param cron: a five- or six-field cron expression for when each occurrence starts, e.g. ``0 2 * * *``.
    :param duration: how long each occurrence lasts.
    :param start: the explicit window's start; a naive value is read in ``timezone``.
    :param end: the explicit window's end (exclusive).
    :param timezone: the IANA zone the cron and naive times are read in.
    :param op_kind: what the writers do, for the conflict matrix: an
        :class:`~airflow_provider_deltacc.contract.op_kinds.OpKind` or its name (``BLIND_APPEND``,
        ``UPDATE``, ...), as write leases name it; MERGE by default (the cautious choice).
    :param partition_values: the partitions they write, a list of ``{column: value}`` dicts as the
        operators' ``partition_values``, or None for the whole table.
    :param name: a label for logs and reasons; defaults to a description of the schedule.
    """

    table: str
    cron: str | None = None
    duration: timedelta | None = None
    start: datetime | None = None
    end: datetime | None = None
    timezone: str = "UTC"
    op_kind: OpKind = OpKind.MERGE
    partition_values: PartitionScope = None
    name: str = field(default="")

    def __init__(
        self,
        table: str,
        cron: str | None = None,
        duration: timedelta | None = None,
        start: datetime | None = None,
        end: datetime | None = None,
        timezone: str = "UTC",
        op_kind: OpKind | str = OpKind.MERGE,
        partition_values: PartitionScope = None,
        name: str = "",
        **renamed: Any,
    ) -> None:
        refuse_renamed(renamed, _RENAMED, owner="WriteWindow")
        if renamed:
            raise TypeError(f"WriteWindow() got unexpected keyword arguments {sorted(renamed)}")
        values = (table, cron, duration, start, end, timezone, op_kind, partition_values, name)
        for attribute, value in zip(_FIELDS, values, strict=True):
            object.__setattr__(self, attribute, value)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table.strip():
            raise ValueError(f"table={self.table!r} must be the non-empty name or path of the Delta table")
        zone = _zone(self.timezone)
        object.__setattr__(self, "op_kind", parse_op_kind(self.op_kind))
        scope = normalize_scope(self.partition_values, field="partition_values")
        object.__setattr__(self, "partition_values", scope)
        recurring = self.cron is not None or self.duration is not None
        explicit = self.start is not None or self.end is not None
        if recurring and explicit:
            raise ValueError(
                f"window on {self.table} sets both cron/duration ({self.cron!r}, {self.duration}) and "
                f"start/end ({self.start}, {self.end}); give either cron and duration, or start and end"
            )
        if recurring:
            self._check_recurring()
        elif explicit:
            self._check_explicit(zone)
        else:
            raise ValueError(
                f"window on {self.table} has no schedule; give cron='0 2 * * *' with "
                "duration=timedelta(hours=1), or start and end datetimes"
            )
        if not self.name:
            object.__setattr__(self, "name", self._default_name())

    def _check_recurring(self) -> None:
        if self.cron is None:
            raise ValueError(
                f"duration={self.duration} is set but cron=None; add cron (when each occurrence starts), "
                "e.g. cron='0 2 * * *'"
            )
        if not isinstance(self.cron, str) or not croniter.is_valid(self.cron):
            raise ValueError(
                f"cron={self.cron!r} is not a valid cron expression; use five fields "
                "'minute hour day-of-month month day-of-week', e.g. '0 2 * * *' for 02:00 every day"
            )
        if not isinstance(self.duration, timedelta) or self.duration <= timedelta(0):
            raise ValueError(
                f"duration={self.duration!r} must be a positive timedelta, e.g. timedelta(hours=1), "
                f"for how long each '{self.cron}' occurrence lasts"
            )

    def _check_explicit(self, zone: ZoneInfo) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if not isinstance(value, datetime):
                raise ValueError(
                    f"{name}={value!r} must be a datetime; an explicit window needs both start and end"
                )
        assert self.start is not None and self.end is not None
        object.__setattr__(self, "start", _as_utc(self.start, zone))
        object.__setattr__(self, "end", _as_utc(self.end, zone))
        if self.end <= self.start:
            raise ValueError(
                f"end={self.end.isoformat()} is not after start={self.start.isoformat()}; "
                "swap them or extend end"
            )

    def _default_name(self) -> str:
        what = f"{self.op_kind.name} window on {format_scope(self.partition_values)}"
        if self.cron is not None:
            return f"{what} ('{self.cron}' {self.timezone}, {self.duration})"
        return what

    @property
    def recurring(self) -> bool:
        """Whether the window is a cron schedule rather than one interval."""
        return self.cron is not None

    def _occurrence_end(self, fire: datetime) -> datetime:
        # Add the duration in UTC: aware arithmetic in a local zone is wall-clock arithmetic, which
        # would stretch or shrink a window that spans a DST change.
        assert self.duration is not None
        return fire.astimezone(UTC) + self.duration

    def _prev_fire(self, at: datetime) -> datetime:
        """The latest occurrence start at or before ``at``."""
        assert self.cron is not None
        local = (at + _EPSILON).astimezone(_zone(self.timezone))
        fire: datetime = croniter(self.cron, local).get_prev(datetime)
        return fire.astimezone(UTC)

    def _next_fire(self, after: datetime) -> datetime:
        """The earliest occurrence start strictly after ``after``."""
        assert self.cron is not None
        local = after.astimezone(_zone(self.timezone))
        fire: datetime = croniter(self.cron, local).get_next(datetime)
        return fire.astimezone(UTC)

    def _merged(self, fire: datetime) -> tuple[datetime, datetime]:
        """The busy period holding the occurrence that starts at ``fire``, merged with touching ones."""
        assert self.cron is not None
        local = fire.astimezone(_zone(self.timezone))
        start, end = fire, self._occurrence_end(fire)
        backward = croniter(self.cron, local)
        while start > fire - MAX_BUSY:
            previous = backward.get_prev(datetime).astimezone(UTC)
            if self._occurrence_end(previous) < start:
                break
            start = previous
        forward = croniter(self.cron, local)
        while end < fire + MAX_BUSY:
            following = forward.get_next(datetime).astimezone(UTC)
            if following > end:
                return start, end
            end = max(end, self._occurrence_end(following))
        raise ValueError(
            f"window {self.name!r} on {self.table} never goes quiet: each occurrence of '{self.cron}' starts "
            f"before the previous one's {self.duration} is over; make duration shorter than the cron interval"
        )

    def active_at(self, now: datetime) -> tuple[datetime, datetime] | None:
        """The busy period (start, end), in UTC, that contains ``now``, or None if the window is quiet.

        :param now: a timezone-aware time.
        """
        now = require_aware(now, field="now")
        if not self.recurring:
            assert self.start is not None and self.end is not None
            return (self.start, self.end) if self.start <= now < self.end else None
        fire = self._prev_fire(now)
        if now >= self._occurrence_end(fire):
            return None
        return self._merged(fire)

    def next_quiet(self, now: datetime) -> datetime:
        """The first time at or after ``now`` when the window is not active (``now`` if it is quiet).

        :param now: a timezone-aware time.
        """
        busy = self.active_at(now)
        return busy[1] if busy is not None else require_aware(now, field="now")

    def next_active(self, now: datetime) -> tuple[datetime, datetime] | None:
        """The busy period active at ``now``, else the next one to start; None if none is to come.

        :param now: a timezone-aware time.
        """
        now = require_aware(now, field="now")
        busy = self.active_at(now)
        if busy is not None:
            return busy
        if not self.recurring:
            assert self.start is not None and self.end is not None
            return (self.start, self.end) if self.start > now else None
        return self._merged(self._next_fire(now))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (ISO-8601 times, duration in seconds); :meth:`from_dict` reverses it."""
        return {
            "table": self.table,
            "cron": self.cron,
            "duration_s": self.duration.total_seconds() if self.duration is not None else None,
            "start": self.start.isoformat() if self.start is not None else None,
            "end": self.end.isoformat() if self.end is not None else None,
            "timezone": self.timezone,
            "op_kind": self.op_kind.value,
            "partition_values": self.partition_values,
            "name": self.name,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteWindow:
        """Build a window from a dict such as an Airflow Variable's JSON.

        Accepts ``duration_s`` (seconds) or ``duration`` (seconds, or a timedelta), and ISO-8601 strings for
        ``start`` / ``end``.

        :param data: the window's fields.
        :raises ValueError: an unknown field (``partitions`` among them: it is called ``partition_values``),
            or a bad value.
        """
        known = {"table", "cron", "duration", "duration_s", "start", "end", "timezone", "op_kind"}
        known |= {"partition_values", "name"}
        try:
            refuse_renamed(data, _RENAMED, owner="write window")
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"write window has unknown fields {unknown}; the fields are {sorted(known)}")
        duration = data.get("duration_s", data.get("duration"))
        if duration is not None and not isinstance(duration, timedelta):
            duration = timedelta(seconds=float(duration))
        times = {
            key: datetime.fromisoformat(value) if isinstance(value, str) else value
            for key in ("start", "end")
            if (value := data.get(key)) is not None
        }
        return cls(
            table=data["table"],
            cron=data.get("cron"),
            duration=duration,
            start=times.get("start"),
            end=times.get("end"),
            timezone=data.get("timezone", "UTC"),
            op_kind=data.get("op_kind", OpKind.MERGE),
            partition_values=data.get("partition_values"),
            name=data.get("name", ""),
        )


_FIELDS = tuple(f.name for f in fields(WriteWindow))


def windows_for(table: str, windows: Iterable[WriteWindow]) -> list[WriteWindow]:
    """The windows declared for ``table``.

    :param table: the table's name or path (any spelling: see
        :func:`~airflow_provider_deltacc.contract.table_location.table_key`).
    :param windows: windows for any tables.
    """
    key = table_key(Table(table))
    return [window for window in windows if table_key(Table(window.table)) == key]
