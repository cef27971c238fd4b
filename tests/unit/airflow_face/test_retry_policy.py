"""DeltaConflictRetryPolicy.evaluate: what Airflow 3.3 does with each failure of a Delta task."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from airflow.sdk import RetryAction

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.exceptions import (
    DeltaCCInfrastructureError,
    DeltaCCInputError,
    DeltaConflictFatal,
    DeltaConflictRetryable,
)
from airflow_provider_deltacc.occ import decide_conflict
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
from tests.unit.occ.recorded import load_cases

pytestmark = pytest.mark.unit

TABLE = "delta.`file:/lake/orders`"
MIN, MAX = timedelta(seconds=10), timedelta(seconds=40)


def _policy(jitter: float = 0.5) -> DeltaConflictRetryPolicy:
    return DeltaConflictRetryPolicy(min_delay=MIN, max_delay=MAX, jitter=jitter)


USER_TABLE = "/lake/orders"


def _report(kind: str, status: str, **conflict: Any) -> dict[str, Any]:
    """A job's report: the table as the user wrote it, the conflict as Delta's message names the table."""
    attempt = {"number": 1, "conflict": {"kind": kind, "table": TABLE, **conflict}}
    return {
        "table": USER_TABLE,
        "status": status,
        "max_attempts": 5,
        "attempts": [attempt, dict(attempt, number=2)],
    }


def test_retryable_conflict_retries_with_a_bounded_jittered_delay_and_a_reason() -> None:
    report = _report("append", "retries_exhausted", partition="[date=2026-11-20]")
    policy = _policy()
    delays = set()
    for try_number, ceiling in ((1, 10.0), (2, 20.0), (3, 40.0), (6, 40.0)):
        for _ in range(20):
            exc = DeltaConflictRetryable("outlasted", report=report)  # a new failure each time
            decision = policy.evaluate(exc, try_number=try_number, max_tries=6)
            assert decision.action is RetryAction.RETRY
            assert decision.retry_delay is not None
            seconds = decision.retry_delay.total_seconds()
            assert ceiling / 2 <= seconds <= ceiling, (try_number, seconds)
            delays.add(seconds)
    assert len(delays) > 10, "the delay is jittered"
    reason = decision.reason or ""
    assert reason.startswith(f"Delta APPEND conflict on table {USER_TABLE} partition [date=2026-11-20]: "), (
        reason
    )
    assert "in-job retries exhausted at attempt 2 of 5" in reason and "Airflow try 7 of 7 starts in" in reason
    assert reason.endswith("Pin the target partitions" + reason.split("Pin the target partitions", 1)[1])


def test_no_jitter_gives_the_exact_exponential_delay() -> None:
    exc = DeltaConflictRetryable("x", report=_report("delete_read", "retries_exhausted"))
    decision = _policy(jitter=0.0).evaluate(exc, try_number=2, max_tries=3)
    assert decision.retry_delay == timedelta(seconds=20)
    assert (decision.reason or "").startswith(f"Delta DELETE_READ conflict on table {USER_TABLE}: ")


def test_retries_beyond_max_tries_fall_back_to_airflow_and_say_why() -> None:
    exc = DeltaConflictRetryable("x", report=_report("append", "retries_exhausted"))
    decision = _policy().evaluate(exc, try_number=3, max_tries=2)
    assert decision.action is RetryAction.DEFAULT and decision.retry_delay is None
    assert "in-job retries exhausted at attempt 2 of 5; try 3 of 3 was the last Airflow try." in (
        decision.reason or ""
    )


def test_a_pinned_merge_that_conflicted_in_its_own_partition_gets_advice_about_the_other_writer() -> None:
    report = {**_report("append", "retries_exhausted", partition="[p=a]"), "pinned_columns": ["p"]}
    reason = _policy().evaluate(DeltaConflictRetryable("x", report=report), 1, 2).reason or ""
    assert "This write is already pinned to its partitions (p)" in reason, reason
    assert "Pin the target partitions" not in reason


def test_the_decision_is_kept_so_asking_again_for_the_same_try_gives_the_same_delay() -> None:
    exc = DeltaConflictRetryable("x", report=_report("append", "retries_exhausted"))
    policy = _policy(jitter=1.0)
    first = policy.evaluate(exc, try_number=1, max_tries=3)
    assert all(policy.evaluate(exc, try_number=1, max_tries=3) == first for _ in range(10))
    assert policy.evaluate(exc, try_number=2, max_tries=3).reason != first.reason  # a new try, a new decision


def test_fatal_conflict_fails_with_a_reason() -> None:
    exc = DeltaConflictFatal(
        "protocol", report=_report("protocol_changed", "conflict_fatal", create_race=True)
    )
    decision = _policy().evaluate(exc, try_number=1, max_tries=3)
    assert decision.action is RetryAction.FAIL
    reason = decision.reason or ""
    assert reason.startswith(f"Delta PROTOCOL_CHANGED conflict on table {USER_TABLE} is not retryable"), (
        reason
    )
    assert "Create the table once, before concurrent writers start." in reason


def test_bad_input_fails_with_a_reason() -> None:
    decision = _policy().evaluate(
        DeltaCCInputError("options.keys[0]='x': no such column", field="options.keys[0]"), 1, 3
    )
    assert decision.action is RetryAction.FAIL
    assert decision.reason == "bad input, retrying cannot help: options.keys[0]='x': no such column"


def test_unreachable_infrastructure_retries_with_the_task_delay_and_says_what() -> None:
    exc = DeltaCCInfrastructureError(
        "conn_id='sc': the Spark Connect server h:15002 cannot be reached (ConnectionRefusedError)",
        unreachable="Spark Connect server h:15002 (conn_id='sc')",
    )
    decision = _policy().evaluate(exc, try_number=1, max_tries=3)
    assert decision.action is RetryAction.RETRY and decision.retry_delay is None  # the task's own delay
    reason = decision.reason or ""
    assert reason.startswith(
        "Spark Connect server h:15002 (conn_id='sc') unreachable: Airflow try 2 of 4 starts"
    )
    assert "ConnectionRefusedError" in reason
    last = _policy().evaluate(exc, try_number=4, max_tries=3)
    assert last.action is RetryAction.DEFAULT and "try 4 of 4 was the last Airflow try" in (last.reason or "")


def test_non_conflict_failures_keep_airflow_defaults() -> None:
    policy = _policy()
    for exc in (RuntimeError("executor lost"), ValueError("boom"), KeyError("x")):
        assert policy.evaluate(exc, 1, 3).action is RetryAction.DEFAULT
    assert policy.decide_message("java.lang.OutOfMemoryError: Java heap space").action is RetryAction.DEFAULT


class ConcurrentAppendException(Exception):
    """Named like delta-spark's Python class: the classifier goes by class name first."""


def test_raw_delta_exception_is_classified() -> None:
    decision = _policy().evaluate(ConcurrentAppendException("Files were added to partition [p=a]"), 1, 3)
    assert decision.action is RetryAction.RETRY
    assert (decision.reason or "").startswith("Delta APPEND conflict on table unknown table")
    assert "raised outside the commit loop" in (decision.reason or "")


CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_recorded_delta_messages_are_classified_and_decided(case: dict[str, Any]) -> None:
    """Every recorded Delta/delta-rs message, handed over as text or inside a plain exception."""
    policy = _policy()
    for decision in (
        policy.decide_message(case["text"], try_number=1, max_tries=3),
        policy.evaluate(RuntimeError(case["text"]), try_number=1, max_tries=3),
    ):
        if case["kind"] is None:
            assert decision.action is RetryAction.DEFAULT
            continue
        kind = ConflictKind(case["kind"])
        verdict = decide_conflict(kind, OperationClass.READ_MODIFY_WRITE, owns_txn_identity=False)
        expected = RetryAction.RETRY if verdict.retry else RetryAction.FAIL
        assert decision.action is expected, (kind, decision.reason)
        assert f"Delta {kind.name} conflict on " in (decision.reason or "")


def test_the_task_operation_class_is_used_for_raw_exceptions() -> None:
    """A blind append meeting METADATA_CHANGED may re-plan; a schema change meeting it must not."""
    text = (
        "[DELTA_METADATA_CHANGED] MetadataChangedException: The metadata of the Delta table has been changed"
    )

    class Task:
        operation_class = OperationClass.SCHEMA_CHANGING

    decision = _policy().evaluate(RuntimeError(text), 1, 3, context={"task": Task()})  # type: ignore[typeddict-item]
    assert decision.action is RetryAction.FAIL
    assert "METADATA_CHANGED" in (decision.reason or "")


def test_serialize_round_trip() -> None:
    policy = DeltaConflictRetryPolicy(min_delay=MIN, max_delay=MAX, jitter=0.25)
    again = DeltaConflictRetryPolicy.deserialize(policy.serialize())
    assert (again.min_delay, again.max_delay, again.jitter) == (MIN, MAX, 0.25)
    with pytest.raises(ValueError, match="max_delay"):
        DeltaConflictRetryPolicy(min_delay=MAX, max_delay=MIN)


def test_the_documented_delay_range_is_the_default_policys() -> None:
    from pathlib import Path

    dash = "\N{EN DASH}"
    policy = DeltaConflictRetryPolicy()
    doc = (Path(__file__).resolve().parents[3] / "docs" / "operators.md").read_text()
    first, second, capped = policy.delay_range(1), policy.delay_range(2), policy.delay_range(20)
    assert (first, second, capped) == ((15.0, 30.0), (30.0, 60.0), (300.0, 600.0))
    for low, high in (first, second):
        assert f"{low:g}{dash}{high:g} s" in doc
    assert f"{capped[0] / 60:g}{dash}{capped[1] / 60:g} min" in doc
    for try_number in (1, 2, 5, 20):
        low, high = policy.delay_range(try_number)
        delays = [policy.delay_for(try_number).total_seconds() for _ in range(200)]
        assert all(low <= d <= high for d in delays)
