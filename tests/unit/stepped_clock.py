"""A clock for unit tests of waits and backoff: it moves only when the code under test sleeps (or a test
moves it), so what a wait does depends on its pauses alone, not on how busy the machine is."""

from __future__ import annotations


class SteppedClock:
    """Stands in for ``time.monotonic`` and ``time.sleep``; every pause is recorded in ``sleeps``.

    :param start: the clock's first reading.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds
