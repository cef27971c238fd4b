"""Reading Delta's retention interval property."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.retention import parse_interval_hours, table_retention_hours

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("interval 1 week", 168.0),
        ("interval 7 days", 168.0),
        ("INTERVAL 36 HOURS", 36.0),
        ("interval 0 hours", 0.0),
        ("2 days 12 hours", 60.0),
        ("interval 90 minutes", 1.5),
    ],
)
def test_parse_interval_hours(text: str, hours: float) -> None:
    assert parse_interval_hours(text) == pytest.approx(hours)


@pytest.mark.parametrize("text", ["", "interval", "one week", "interval 3 fortnights", "7 days or so"])
def test_parse_interval_refuses_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interval_hours(text)


def test_table_retention_defaults_to_a_week() -> None:
    assert table_retention_hours({}) == 168.0
    assert table_retention_hours({"delta.deletedFileRetentionDuration": "interval 2 days"}) == 48.0
