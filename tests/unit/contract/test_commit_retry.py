"""CommitRetryPolicy: defaults, validation, backoff windows, jitter bounds and stop reasons."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy

pytestmark = pytest.mark.unit


def test_defaults_follow_iceberg() -> None:
    policy = CommitRetryPolicy()

    assert policy.to_dict() == {
        "max_attempts": 5,
        "min_wait_s": 0.1,
        "max_wait_s": 60.0,
        "total_timeout_s": 1800.0,
        "jitter": "full",
        "multiplier": 2.0,
    }


def test_windows_grow_exponentially_and_cap() -> None:
    policy = CommitRetryPolicy(min_wait_s=0.1, max_wait_s=1.0, multiplier=2.0)

    windows = [policy.window(n) for n in range(1, 8)]

    assert windows[:4] == pytest.approx([0.1, 0.2, 0.4, 0.8])
    assert windows[4:] == [1.0, 1.0, 1.0]


def test_window_for_huge_attempt_numbers_is_the_cap() -> None:
    assert CommitRetryPolicy().window(10_000) == 60.0


def test_constant_window_with_multiplier_one() -> None:
    policy = CommitRetryPolicy(min_wait_s=0.5, max_wait_s=10, multiplier=1.0, jitter="none")
    assert [policy.wait_for(n) for n in (1, 2, 10)] == [0.5, 0.5, 0.5]


@pytest.mark.parametrize("attempt", [1, 2, 3, 5, 8, 12, 40])
def test_full_jitter_stays_within_zero_and_the_window(attempt: int) -> None:
    policy = CommitRetryPolicy(min_wait_s=0.1, max_wait_s=5.0)
    rng = random.Random(attempt)
    cap = policy.window(attempt)

    waits = [policy.wait_for(attempt, rng) for _ in range(500)]

    assert all(0.0 <= w <= cap for w in waits)
    assert max(waits) > cap * 0.9 and min(waits) < cap * 0.1, "spread over the whole window"


def test_equal_jitter_stays_in_the_upper_half() -> None:
    policy = CommitRetryPolicy(jitter="equal", min_wait_s=1.0, max_wait_s=8.0)
    rng = random.Random(7)
    for attempt in range(1, 8):
        cap = policy.window(attempt)
        for _ in range(100):
            assert cap / 2 <= policy.wait_for(attempt, rng) <= cap


def test_no_jitter_is_the_window() -> None:
    policy = CommitRetryPolicy(jitter="none", min_wait_s=0.25, max_wait_s=3.0)
    assert [policy.wait_for(n) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 3.0]


def test_seeded_rng_is_deterministic() -> None:
    policy = CommitRetryPolicy()
    first = [policy.wait_for(n, random.Random(42)) for n in range(1, 6)]
    second = [policy.wait_for(n, random.Random(42)) for n in range(1, 6)]
    assert first == second


def test_global_random_is_used_without_rng() -> None:
    policy = CommitRetryPolicy(max_wait_s=2.0)
    random.seed(3)
    waits = [policy.wait_for(4) for _ in range(50)]
    assert all(0 <= w <= policy.window(4) for w in waits)
    assert len(set(waits)) > 1


def test_attempt_number_must_be_positive() -> None:
    with pytest.raises(ValueError, match="attempt_number"):
        CommitRetryPolicy().wait_for(0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_attempts", 0),
        ("max_attempts", -3),
        ("max_attempts", 2.5),
        ("max_attempts", True),
        ("min_wait_s", -0.1),
        ("min_wait_s", math.nan),
        ("max_wait_s", 0.05),
        ("max_wait_s", math.inf),
        ("total_timeout_s", 0),
        ("total_timeout_s", -5.0),
        ("multiplier", 0.5),
        ("multiplier", "2"),
        ("jitter", "decorrelated"),
        ("jitter", "FULL"),
    ],
)
def test_validation_names_field_and_value(field: str, value: Any) -> None:
    with pytest.raises(ValueError) as info:
        CommitRetryPolicy(**{field: value})

    message = str(info.value)
    assert f"CommitRetryPolicy.{field}" in message
    assert repr(value) in message


def test_validation_suggests_a_fix() -> None:
    with pytest.raises(ValueError, match="raise max_wait_s or lower min_wait_s"):
        CommitRetryPolicy(min_wait_s=5, max_wait_s=1)
    with pytest.raises(ValueError, match="full, equal, none"):
        CommitRetryPolicy(jitter="random")


def test_from_dict_round_trip() -> None:
    policy = CommitRetryPolicy(
        max_attempts=3, min_wait_s=0.5, max_wait_s=30, total_timeout_s=600, jitter="equal"
    )

    assert CommitRetryPolicy.from_dict(policy.to_dict()) == policy
    assert CommitRetryPolicy.from_dict({}) == CommitRetryPolicy()
    assert CommitRetryPolicy.from_dict({"max_attempts": 2}).max_attempts == 2


def test_from_dict_rejects_unknown_keys_by_name() -> None:
    with pytest.raises(ValueError, match="'max_retries'") as info:
        CommitRetryPolicy.from_dict({"max_retries": 4})
    assert "max_attempts" in str(info.value), "lists the valid fields"


def test_from_dict_validates_values() -> None:
    with pytest.raises(ValueError, match=r"CommitRetryPolicy\.max_attempts"):
        CommitRetryPolicy.from_dict({"max_attempts": 0})


def test_stop_reason() -> None:
    policy = CommitRetryPolicy(max_attempts=3, total_timeout_s=100)

    assert policy.stop_reason(1, 0.0) is None
    assert policy.stop_reason(2, 99.9) is None
    assert policy.stop_reason(3, 1.0) == "attempt limit of 3 reached"
    reason = policy.stop_reason(1, 100.0)
    assert reason is not None and "total timeout of 100 s" in reason


def test_single_attempt_policy_never_retries() -> None:
    assert CommitRetryPolicy(max_attempts=1).stop_reason(1, 0.0) == "attempt limit of 1 reached"
