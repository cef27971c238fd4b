"""Declared write windows: cron + duration, explicit times, time zones, merging, validation."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.gate import WriteWindow, windows_for

pytestmark = pytest.mark.unit


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


NIGHTLY = WriteWindow("sales.orders", cron="0 2 * * *", duration=timedelta(hours=1))


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (utc(2026, 11, 20, 1, 59), None),
        (utc(2026, 11, 20, 2, 0), (utc(2026, 11, 20, 2, 0), utc(2026, 11, 20, 3, 0))),
        (utc(2026, 11, 20, 2, 59, 59), (utc(2026, 11, 20, 2, 0), utc(2026, 11, 20, 3, 0))),
        (utc(2026, 11, 20, 3, 0), None),
    ],
)
def test_cron_window_is_active_from_each_start_for_its_duration(
    now: datetime, expected: tuple[datetime, datetime] | None
) -> None:
    assert NIGHTLY.active_at(now) == expected


def test_next_quiet_and_next_active() -> None:
    assert NIGHTLY.next_quiet(utc(2026, 11, 20, 2, 30)) == utc(2026, 11, 20, 3, 0)
    assert NIGHTLY.next_quiet(utc(2026, 11, 20, 4, 0)) == utc(2026, 11, 20, 4, 0)
    assert NIGHTLY.next_active(utc(2026, 11, 20, 4, 0)) == (utc(2026, 11, 21, 2, 0), utc(2026, 11, 21, 3, 0))


def test_cron_is_read_in_the_window_time_zone_across_dst() -> None:
    berlin = WriteWindow("t", cron="0 2 * * *", duration=timedelta(hours=1), timezone="Europe/Berlin")
    # Winter (UTC+1): 02:00 Berlin is 01:00 UTC; summer (UTC+2): 00:00 UTC.
    assert berlin.active_at(utc(2026, 11, 20, 1, 30)) == (utc(2026, 11, 20, 1, 0), utc(2026, 11, 20, 2, 0))
    assert berlin.active_at(utc(2026, 7, 1, 0, 30)) == (utc(2026, 7, 1, 0, 0), utc(2026, 7, 1, 1, 0))
    assert berlin.active_at(utc(2026, 7, 1, 1, 30)) is None


def test_duration_is_elapsed_time_even_when_dst_changes_inside_the_window() -> None:
    # 2026-03-29 02:00 Berlin does not exist (clocks jump 02:00 -> 03:00); a 01:30 start lasts 2 real hours.
    window = WriteWindow("t", cron="30 1 * * *", duration=timedelta(hours=2), timezone="Europe/Berlin")
    assert window.active_at(utc(2026, 3, 29, 1, 0)) == (utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 2, 30))


def test_overlapping_occurrences_merge_into_one_busy_period() -> None:
    window = WriteWindow("t", cron="0 * * * *", duration=timedelta(minutes=70))
    # Every hour for 70 minutes: busy forever.
    with pytest.raises(ValueError, match="never goes quiet"):
        window.active_at(utc(2026, 11, 20, 10, 30))
    office = WriteWindow("t", cron="*/10 9-17 * * 1-5", duration=timedelta(minutes=15))
    # Friday 2026-11-20: occurrences 09:00 ... 17:50 chain into one period ending 18:05.
    assert office.active_at(utc(2026, 11, 20, 12, 1)) == (utc(2026, 11, 20, 9, 0), utc(2026, 11, 20, 18, 5))
    assert office.active_at(utc(2026, 11, 20, 18, 5)) is None
    assert office.next_active(utc(2026, 11, 20, 18, 5)) == (utc(2026, 11, 23, 9, 0), utc(2026, 11, 23, 18, 5))


def test_explicit_window_naive_times_are_read_in_its_time_zone() -> None:
    window = WriteWindow(
        "t",
        start=datetime(2026, 11, 20, 10, 0),
        end=datetime(2026, 11, 20, 12, 0),
        timezone="America/New_York",
    )
    assert window.start == utc(2026, 11, 20, 15, 0)
    assert window.active_at(utc(2026, 11, 20, 14, 59)) is None
    assert window.active_at(utc(2026, 11, 20, 15, 0)) == (utc(2026, 11, 20, 15, 0), utc(2026, 11, 20, 17, 0))
    assert window.next_active(utc(2026, 11, 20, 12, 0)) == (
        utc(2026, 11, 20, 15, 0),
        utc(2026, 11, 20, 17, 0),
    )
    assert window.next_active(utc(2026, 11, 20, 17, 0)) is None


def test_explicit_window_aware_times_keep_their_offset() -> None:
    start = datetime.fromisoformat("2026-11-20T10:00:00+05:30")
    window = WriteWindow("t", start=start, end=start + timedelta(hours=1), timezone="Europe/Berlin")
    assert window.start == utc(2026, 11, 20, 4, 30)


def test_dict_round_trip_and_defaults() -> None:
    window = WriteWindow(
        "t",
        cron="15 3 * * *",
        duration=timedelta(minutes=45),
        op_kind="blind_append",
        partition_values=[{"date": "2026-11-20"}],
    )
    assert window.op_kind is OpKind.BLIND_APPEND
    assert window.to_dict()["partition_values"] == [{"date": "2026-11-20"}]
    assert "partitions" not in window.to_dict()
    assert WriteWindow.from_dict(window.to_dict()) == window
    explicit = WriteWindow.from_dict(
        {"table": "t", "start": "2026-11-20T10:00:00+00:00", "end": "2026-11-20T11:00:00+00:00"}
    )
    assert explicit.op_kind is OpKind.MERGE
    assert WriteWindow.from_dict(explicit.to_dict()) == explicit
    assert WriteWindow.from_dict({"table": "t", "cron": "0 2 * * *", "duration": 3600}).duration == timedelta(
        hours=1
    )


def test_windows_for_filters_by_table() -> None:
    other = WriteWindow("other", cron="0 2 * * *", duration=timedelta(hours=1))
    assert windows_for("sales.orders", [NIGHTLY, other]) == [NIGHTLY]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"cron": "0 2 * *", "duration": timedelta(hours=1)},
            "cron='0 2 * *' is not a valid cron expression",
        ),
        ({"cron": "0 2 * * *"}, "duration=None must be a positive timedelta, e.g. timedelta(hours=1)"),
        (
            {"cron": "0 2 * * *", "duration": timedelta(0)},
            "duration=datetime.timedelta(0) must be a positive",
        ),
        ({"duration": timedelta(hours=1)}, "duration=1:00:00 is set but cron=None; add cron"),
        ({"start": datetime(2026, 11, 20, 10)}, "end=None must be a datetime"),
        (
            {"start": datetime(2026, 11, 20, 10), "end": datetime(2026, 11, 20, 9)},
            "end=2026-11-20T09:00:00+00:00 is not after start=2026-11-20T10:00:00+00:00",
        ),
        ({}, "window on t has no schedule; give cron='0 2 * * *'"),
        (
            {"cron": "0 2 * * *", "duration": timedelta(hours=1), "start": datetime(2026, 11, 20)},
            "window on t sets both cron/duration",
        ),
        (
            {"cron": "0 2 * * *", "duration": timedelta(hours=1), "timezone": "Mars/Olympus"},
            "timezone='Mars/Olympus' is not an IANA time zone; use a name such as 'UTC'",
        ),
        (
            {"cron": "0 2 * * *", "duration": timedelta(hours=1), "op_kind": "upsert"},
            "op_kind='upsert' is not an operation kind",
        ),
    ],
)
def test_validation_names_field_value_and_fix(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        WriteWindow("t", **kwargs)


def test_unknown_dict_fields_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown fields \['durtion'\]"):
        WriteWindow.from_dict({"table": "t", "cron": "0 2 * * *", "durtion": 60})
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['partiton_values'\]"):
        WriteWindow("t", cron="0 2 * * *", duration=timedelta(hours=1), partiton_values=[])  # type: ignore[call-arg]


def test_partitions_is_refused_naming_partition_values() -> None:
    """``partitions`` was the field's name before the rename; nothing was released under it."""
    scope = [{"date": "2026-11-20"}]
    said = "got partitions=[{'date': '2026-11-20'}]; it is called partition_values: pass partition_values="
    with pytest.raises(TypeError, match=re.escape(f"WriteWindow {said}")):
        WriteWindow("t", cron="0 2 * * *", duration=timedelta(hours=1), partitions=scope)  # type: ignore[call-arg]
    data = {"table": "t", "cron": "0 2 * * *", "duration_s": 3600, "partitions": scope}
    with pytest.raises(ValueError, match=re.escape(f"write window {said}")):
        WriteWindow.from_dict(data)
    window = WriteWindow("t", cron="0 2 * * *", duration=timedelta(hours=1), partition_values=scope)
    assert not hasattr(window, "partitions")
    assert WriteWindow.from_dict(window.to_dict()) == window


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="now=2026-11-20T02:00:00 has no timezone"):
        NIGHTLY.active_at(datetime(2026, 11, 20, 2, 0))
