"""The in-job retry policy of a conflict (the job spec's ``commit_retry``): how many attempts, how long to
wait between them, and when to stop."""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, fields
from typing import Any

import tenacity

JITTERS: tuple[str, ...] = ("full", "equal", "none")

_RETRYING = tenacity.Retrying()


@dataclass(frozen=True)
class CommitRetryPolicy:
    """Bounded exponential backoff with jitter for conflict retries.

    The defaults follow Iceberg's commit retries: 4 retries (5 attempts), 100 ms to 60 s, 30 minutes.

    :param max_attempts: attempts in total, the first included.
    :param min_wait_s: the first backoff window in seconds.
    :param max_wait_s: the largest backoff window in seconds.
    :param total_timeout_s: no attempt starts after this many seconds since the first one.
    :param jitter: ``"full"`` (uniform in [0, window]), ``"equal"`` (half fixed, half random) or ``"none"``.
    :param multiplier: how much the window grows after each failed attempt.
    """

    max_attempts: int = 5
    min_wait_s: float = 0.1
    max_wait_s: float = 60.0
    total_timeout_s: float = 1800.0
    jitter: str = "full"
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise ValueError(
                f"CommitRetryPolicy.max_attempts must be an int, got {self.max_attempts!r}; use e.g. 5"
            )
        if self.max_attempts < 1:
            raise ValueError(
                f"CommitRetryPolicy.max_attempts must be >= 1, got {self.max_attempts!r}; "
                "use 1 to disable in-job retries"
            )
        for name in ("min_wait_s", "max_wait_s", "total_timeout_s", "multiplier"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"CommitRetryPolicy.{name} must be a finite number, got {value!r}")
        if self.min_wait_s < 0:
            raise ValueError(
                f"CommitRetryPolicy.min_wait_s must be >= 0, got {self.min_wait_s!r}; use e.g. 0.1"
            )
        if self.max_wait_s < self.min_wait_s:
            raise ValueError(
                f"CommitRetryPolicy.max_wait_s must be >= min_wait_s ({self.min_wait_s!r}), "
                f"got {self.max_wait_s!r}; raise max_wait_s or lower min_wait_s"
            )
        if self.total_timeout_s <= 0:
            raise ValueError(
                f"CommitRetryPolicy.total_timeout_s must be > 0, got {self.total_timeout_s!r}; use e.g. 1800"
            )
        if self.multiplier < 1:
            raise ValueError(
                f"CommitRetryPolicy.multiplier must be >= 1, got {self.multiplier!r}; use 2.0 for doubling "
                "or 1.0 for a constant window"
            )
        if self.jitter not in JITTERS:
            raise ValueError(
                f"CommitRetryPolicy.jitter must be one of {', '.join(JITTERS)}, got {self.jitter!r}; "
                "use 'full' unless you have a reason not to"
            )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CommitRetryPolicy:
        """Build a policy from a dict (e.g. operator arguments or a job spec); missing keys keep defaults.

        :param data: field name to value.
        :raises ValueError: on an unknown key or an invalid value.
        """
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ValueError(
                    f"CommitRetryPolicy has no field {key!r}; valid fields are {', '.join(sorted(known))}"
                )
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Return the policy as a JSON-safe dict; :meth:`from_dict` reverses it."""
        return asdict(self)

    def window(self, attempt_number: int) -> float:
        """Return the backoff window (the largest wait) after failed attempt ``attempt_number``.

        :param attempt_number: the 1-based number of the attempt that just failed.
        """
        strategy = tenacity.wait_exponential(
            multiplier=self.min_wait_s, exp_base=self.multiplier, min=self.min_wait_s, max=self.max_wait_s
        )
        return float(strategy(_state(attempt_number)))

    def wait_for(self, attempt_number: int, rng: random.Random | None = None) -> float:
        """Return how long to sleep after failed attempt ``attempt_number`` before the next one.

        Full jitter is tenacity's ``wait_random_exponential`` with a lower bound of 0; it is computed here
        from ``wait_exponential`` so that an injected ``rng`` is honoured (tenacity draws from the global
        ``random`` module).

        :param attempt_number: the 1-based number of the attempt that just failed.
        :param rng: the random source; the ``random`` module when None.
        """
        if attempt_number < 1:
            raise ValueError(f"attempt_number must be >= 1, got {attempt_number!r}")
        cap = self.window(attempt_number)
        draw = rng.uniform if rng is not None else random.uniform
        if self.jitter == "full":
            return draw(0.0, cap)
        if self.jitter == "equal":
            return cap / 2 + draw(0.0, cap / 2)
        return cap

    def stop_reason(self, attempts_made: int, elapsed_s: float) -> str | None:
        """Return why no further attempt may start, or None if one may.

        :param attempts_made: attempts already made, the failed one included.
        :param elapsed_s: seconds since the first attempt started.
        """
        state = _state(attempts_made)
        state.start_time = 0.0
        state.outcome_timestamp = elapsed_s
        if tenacity.stop_after_attempt(self.max_attempts)(state):
            return f"attempt limit of {self.max_attempts} reached"
        if tenacity.stop_after_delay(self.total_timeout_s)(state):
            return f"total timeout of {self.total_timeout_s:g} s reached after {elapsed_s:.1f} s"
        return None


def _state(attempt_number: int) -> tenacity.RetryCallState:
    # tenacity's wait and stop strategies only read the attempt number and the timestamps.
    state = tenacity.RetryCallState(_RETRYING, None, (), {})
    state.attempt_number = attempt_number
    return state
