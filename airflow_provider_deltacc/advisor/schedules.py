"""When a DAG's runs happen, and whether runs of two DAGs (or two runs of one DAG) can overlap.

The approximation: a run starts at each fire time of the DAG's timetable and lasts ``run_duration``
(the DAG's ``dagrun_timeout`` when it has one, else the expected duration given to the advisor). Fire
times are computed with croniter (cron timetables) or by steps (timedelta timetables) over a horizon
(7 days by default) from a reference time. A DAG without a computable schedule (``schedule=None``,
asset-triggered, ``@once``, a custom timetable) may be triggered at any time: it may overlap anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

ScheduleKind = Literal["cron", "delta", "anytime", "continuous"]

#: The longest list of fire times computed per DAG; denser schedules are cut at the horizon anyway.
MAX_FIRES = 5000


@dataclass(frozen=True)
class Schedule:
    """A DAG's runs as the advisor models them.

    :param dag_id: the DAG.
    :param kind: ``cron``, ``delta``, ``anytime`` (manual, asset-triggered, unknown) or ``continuous``.
    :param description: e.g. ``'0 2 * * *' (UTC)`` or ``schedule=None (manual runs)``.
    :param crons: cron expressions (``cron``).
    :param timezone: the cron time zone.
    :param delta: the step (``delta``).
    :param start: the DAG's start date (steps count from it).
    :param run_duration: how long a run is assumed to last.
    :param max_active_runs: the DAG's limit of concurrent runs.
    :param catchup: the DAG catches up missed intervals (runs back to back, concurrently).
    """

    dag_id: str
    kind: ScheduleKind
    description: str
    crons: tuple[str, ...] = ()
    timezone: str = "UTC"
    delta: timedelta | None = None
    start: datetime | None = None
    run_duration: timedelta = timedelta(hours=1)
    max_active_runs: int = 16
    catchup: bool = False

    def fires(self, begin: datetime, end: datetime) -> list[datetime]:
        """Fire times in ``[begin, end)``, in UTC (empty for ``anytime``/``continuous``)."""
        if self.kind == "cron":
            return _cron_fires(self.crons, self.timezone, begin, end)
        if self.kind == "delta" and self.delta is not None and self.delta > timedelta(0):
            origin = self.start or begin
            steps = max(0, int((begin - origin) / self.delta))
            fire, found = origin + steps * self.delta, list[datetime]()
            while fire < end and len(found) < MAX_FIRES:
                if fire >= begin:
                    found.append(fire)
                fire += self.delta
            return found
        return []


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _cron_fires(crons: tuple[str, ...], timezone: str, begin: datetime, end: datetime) -> list[datetime]:
    found: set[datetime] = set()
    zone = _zone(timezone)
    for expression in crons:
        iterator = croniter(expression, (begin - timedelta(microseconds=1)).astimezone(zone))
        for _ in range(MAX_FIRES):
            fire: datetime = iterator.get_next(datetime).astimezone(UTC)
            if fire >= end:
                break
            found.add(fire)
    return sorted(found)


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    # A plain datetime: pendulum's arithmetic does not mix with stdlib timedeltas.
    return datetime.fromtimestamp(aware.timestamp(), UTC)


def dag_schedule(dag: Any, *, default_duration: timedelta = timedelta(hours=1)) -> Schedule:
    """Model ``dag``'s runs from its timetable (see the module docstring).

    :param dag: an Airflow DAG.
    :param default_duration: the run duration when the DAG has no ``dagrun_timeout``.
    """
    timetable = getattr(dag, "timetable", None)
    name = type(timetable).__name__
    common: dict[str, Any] = {
        "dag_id": str(dag.dag_id),
        "run_duration": dag.dagrun_timeout if isinstance(dag.dagrun_timeout, timedelta) else default_duration,
        "max_active_runs": int(getattr(dag, "max_active_runs", 16) or 16),
        "catchup": bool(getattr(dag, "catchup", False)),
        "start": _aware(getattr(dag, "start_date", None)),
    }
    crons, zone_name, delta = _timetable_fields(timetable)
    if crons and (name == "MultipleCronTriggerTimetable" or croniter.is_valid(crons[0])):
        return Schedule(
            kind="cron", crons=crons, timezone=zone_name, description=_cron_text(crons, zone_name), **common
        )
    if isinstance(delta, timedelta):
        return Schedule(kind="delta", delta=delta, description=f"every {delta}", **common)
    if name == "ContinuousTimetable":
        return Schedule(kind="continuous", description="@continuous (always running)", **common)
    why = {
        "NullTimetable": "schedule=None (manual runs)",
        "OnceTimetable": "@once (one run, at any time)",
        "AssetTriggeredTimetable": "asset-triggered",
        "AssetOrTimeSchedule": "asset-triggered or timed",
    }.get(name, f"timetable {name} (not computed)")
    return Schedule(kind="anytime", description=why, **common)


def _timetable_fields(timetable: Any) -> tuple[tuple[str, ...], str, Any]:
    """A timetable's cron expressions, time zone name and step (a timedelta, or what it has instead).

    A DAG file's timetable (the task SDK's) has them as attributes; a serialized DAG's (Airflow core's) keeps
    them private and gives them from ``serialize()``, the form the DAG was stored in.
    """
    if hasattr(timetable, "timetables") or hasattr(timetable, "expression") or hasattr(timetable, "delta"):
        parts = list(getattr(timetable, "timetables", None) or [timetable])
        crons = tuple(str(t.expression) for t in parts if isinstance(getattr(t, "expression", None), str))
        return crons, _zone_name(getattr(parts[0], "timezone", None)), getattr(timetable, "delta", None)
    try:
        fields = timetable.serialize() if callable(getattr(timetable, "serialize", None)) else {}
    except Exception:  # a custom timetable's own serialization: its schedule is not computed
        fields = {}
    expressions = fields.get("expressions") or [fields.get("expression")]
    crons = tuple(str(e) for e in expressions if isinstance(e, str))
    delta = fields.get("delta")
    if isinstance(delta, int | float) and not isinstance(delta, bool):
        delta = timedelta(seconds=delta)  # a timedelta step is stored in seconds, a relativedelta as a dict
    return crons, _zone_name(fields.get("timezone")), delta


def _zone_name(zone: Any) -> str:
    """The name of a time zone given as a name, a pendulum zone or (serialized) a UTC offset in seconds."""
    if isinstance(zone, int) and not isinstance(zone, bool):
        from pendulum import FixedTimezone

        return str(FixedTimezone(zone).name)
    return str(getattr(zone, "name", zone) or "UTC")


def _cron_text(crons: tuple[str, ...], zone: str) -> str:
    return " or ".join(f"'{c}'" for c in crons) + f" ({zone})"


@dataclass(frozen=True)
class Timing:
    """Whether two tasks' runs can overlap in time, and why.

    :param overlaps: they can run at the same time.
    :param why: one phrase for the report.
    """

    overlaps: bool
    why: str


def _first_overlap(a: Schedule, b: Schedule, begin: datetime, end: datetime) -> datetime | None:
    left = [(f, f + a.run_duration) for f in a.fires(begin - a.run_duration, end)]
    right = [(f, f + b.run_duration) for f in b.fires(begin - b.run_duration, end)]
    i = j = 0
    while i < len(left) and j < len(right):
        start = max(left[i][0], right[j][0])
        if start < min(left[i][1], right[j][1]):
            return start
        if left[i][1] <= right[j][1]:
            i += 1
        else:
            j += 1
    return None


def schedules_overlap(
    a: Schedule, b: Schedule, *, reference: datetime, horizon: timedelta = timedelta(days=7)
) -> Timing:
    """Whether a run of ``a`` and a run of ``b`` (different DAGs) can be active at the same time.

    :param a: one DAG's schedule.
    :param b: the other's.
    :param reference: where the horizon starts (aware).
    :param horizon: how far ahead fire times are computed.
    """
    for one in (a, b):
        if one.kind in ("anytime", "continuous"):
            return Timing(True, f"{one.dag_id} runs {one.description}: it may overlap anything")
    if a.catchup or b.catchup:
        late = a if a.catchup else b
        return Timing(True, f"{late.dag_id} has catchup=True: catch-up runs may overlap anything")
    first = _first_overlap(a, b, reference, reference + horizon)
    runs = f"{a.description} for {a.run_duration} and {b.description} for {b.run_duration}"
    if first is None:
        return Timing(False, f"their runs never overlap within {horizon.days} days: {runs}")
    return Timing(True, f"their runs overlap (first at {first:%Y-%m-%d %H:%M} UTC): {runs}")


def runs_overlap(
    schedule: Schedule, *, reference: datetime, horizon: timedelta = timedelta(days=7)
) -> Timing:
    """Whether two runs of one DAG can be active at once (``max_active_runs`` > 1 and a reason).

    :param schedule: the DAG's schedule.
    :param reference: where the horizon starts (aware).
    :param horizon: how far ahead fire times are computed.
    """
    limit = f"max_active_runs={schedule.max_active_runs}"
    if schedule.max_active_runs <= 1:
        return Timing(False, "max_active_runs=1: its runs never overlap")
    if schedule.kind in ("anytime", "continuous"):
        return Timing(True, f"{limit} and {schedule.description}: two runs may be active at once")
    if schedule.catchup:
        return Timing(True, f"{limit} and catchup=True: catch-up runs run concurrently")
    fires = schedule.fires(reference, reference + horizon)
    gaps = [later - earlier for earlier, later in pairwise(fires)]
    if gaps and min(gaps) < schedule.run_duration:
        return Timing(True, f"{limit}: runs {min(gaps)} apart outlast each other ({schedule.run_duration})")
    return Timing(
        True,
        f"{limit}: scheduled runs do not overlap, but a manual run, a backfill or a run that outlasts "
        f"{schedule.run_duration} can",
    )
