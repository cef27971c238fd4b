"""A try's lost seconds, read from its stored commit report in one place."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.contract.try_times import TryTimes, seconds_of

pytestmark = pytest.mark.unit


def test_a_reports_waits_and_wasted_work_are_added_up_per_kind() -> None:
    report = {
        "first_turn_wait_s": 3.25,
        "attempts": [
            {"outcome": "conflict", "wasted_s": 2.0, "turn_wait_s": 1.0},
            {"outcome": "conflict", "wasted_s": 0.5, "turn_wait_s": 0.5},
            {"outcome": "committed", "wasted_s": 0.0, "turn_wait_s": 0.0},
        ],
    }

    times = TryTimes.of(report)

    assert times == TryTimes(wasted_s=2.5, first_turn_wait_s=3.25, turn_wait_s=1.5)
    assert times.waited_s == pytest.approx(4.75)


@pytest.mark.parametrize(
    "report",
    [
        {},
        {"attempts": None, "first_turn_wait_s": None},
        {"attempts": ["not an attempt", 7], "first_turn_wait_s": "3"},
        {"attempts": [{"wasted_s": True, "turn_wait_s": "1.5"}], "first_turn_wait_s": False},
    ],
    ids=["empty", "nulls", "not-attempts", "not-numbers"],
)
def test_an_older_or_hand_edited_report_reads_as_no_time_lost(report: dict[str, Any]) -> None:
    assert TryTimes.of(report) == TryTimes()
    assert TryTimes.of(report).waited_s == 0.0


def test_only_numbers_are_durations() -> None:
    assert [seconds_of(v) for v in (2, 1.5, None, "2", True)] == [2.0, 1.5, 0.0, 0.0, 0.0]
