"""The seconds one try of a write lost, read from its commit report as stored (XCom, a report line): the
work its failed attempts threw away, and its waits for its turns. The one place they are added up: the
task log, the metrics, the conflicts page and the benches read them here.

The Airflow side's reading of a report: the Spark driver writes the report and never imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


def seconds_of(value: Any) -> float:
    """A duration a report gives, 0.0 when it gives none or no number (a hand-edited or older report must
    not break a reader; the conflicts page's database sums read such a value as missing too)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@dataclass(frozen=True)
class TryTimes:
    """One try's lost seconds.

    :param wasted_s: the durations of its attempts that did not commit.
    :param first_turn_wait_s: its wait for its turn before its first attempt.
    :param turn_wait_s: its waits for its turn after its lost conflicts, added up.
    """

    wasted_s: float = 0.0
    first_turn_wait_s: float = 0.0
    turn_wait_s: float = 0.0

    @property
    def waited_s(self) -> float:
        """Every wait for its turn: before its first attempt and after each lost conflict."""
        return self.first_turn_wait_s + self.turn_wait_s

    def __add__(self, other: TryTimes) -> TryTimes:
        return TryTimes(
            wasted_s=self.wasted_s + other.wasted_s,
            first_turn_wait_s=self.first_turn_wait_s + other.first_turn_wait_s,
            turn_wait_s=self.turn_wait_s + other.turn_wait_s,
        )

    @classmethod
    def of(cls, report: Mapping[str, Any]) -> TryTimes:
        """The times of the try whose commit report (as a dict) is ``report``."""
        attempts = [a for a in report.get("attempts") or [] if isinstance(a, Mapping)]
        return cls(
            wasted_s=sum(seconds_of(a.get("wasted_s")) for a in attempts),
            first_turn_wait_s=seconds_of(report.get("first_turn_wait_s")),
            turn_wait_s=sum(seconds_of(a.get("turn_wait_s")) for a in attempts),
        )
