"""The report that spans tries: each try adds its report and Airflow's decision to state that outlives it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from unittest.mock import MagicMock

import pytest

from airflow_provider_deltacc.exceptions import DeltaConflictRetryable
from airflow_provider_deltacc.operators import DeltaMergeOperator
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
from airflow_provider_deltacc.retries.tries import TryDecision, add_try_to_history, report_tries
from tests.unit.airflow_face.conftest import make_context

pytestmark = pytest.mark.unit

CONFLICT = {
    "kind": "append",
    "partition": "[p=a]",
    "table": "delta.`file:/lake/orders`",
    "winning_version": 3,
}


class FakeStateStore:
    """``context["task_state_store"]``: one task instance's keys, shared by its tries."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any, *, retention: timedelta | None = None) -> None:
        assert value is not None
        self.values[key] = value


class BrokenStateStore(FakeStateStore):
    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("state store backend down")


def _lost(number: int = 1) -> dict[str, Any]:
    return {
        "operation": "MERGE",
        "table": "/lake/orders",
        "status": "conflict_exhausted",
        "max_attempts": 1,
        "pinned_columns": ["p"],
        "attempts": [{"number": number, "outcome": "conflict", "wasted_s": 0.5, "conflict": CONFLICT}],
    }


def _committed() -> dict[str, Any]:
    return {
        "operation": "MERGE",
        "table": "/lake/orders",
        "status": "committed",
        "table_version": 4,
        "max_attempts": 1,
        "attempts": [{"number": 1, "outcome": "committed", "wasted_s": 0.0}],
    }


def _merge(outcomes: list[Any]) -> DeltaMergeOperator:
    op = DeltaMergeOperator(
        task_id="merge_orders",
        table="/lake/orders",
        source="/in/x.parquet",
        keys=["id", "p"],
        retries=2,
        retry_policy=DeltaConflictRetryPolicy(min_delay=timedelta(seconds=1), max_delay=timedelta(seconds=1)),
        execution_mode="in_process",  # no Spark connection to check at the task's start: run_spec is replaced
    )

    def run_spec(context: Any, spec: dict[str, Any]) -> dict[str, Any]:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return dict(outcome)

    op.run_spec = run_spec  # type: ignore[method-assign]
    op._cached_logger = MagicMock()
    return op


def test_every_try_is_in_the_final_report_with_its_decision_and_reason() -> None:
    store = FakeStateStore()
    lost = DeltaConflictRetryable("outlasted", report=_lost())
    op = _merge([lost, _committed()])
    first = make_context(task_id="merge_orders", try_number=1, max_tries=2, task_state_store=store)
    with pytest.raises(DeltaConflictRetryable):
        op.execute(first)

    # The failed try opens its failure with one line: Airflow's decision and the policy's reason.
    log: Any = op._cached_logger
    top = log.error.call_args.args[1]
    assert top.startswith(
        "Try 1 of 3 failed, Airflow decision RETRY: Delta APPEND conflict on table /lake/orders "
    )
    assert "in-job retries exhausted at attempt 1 of 1; Airflow try 2 of 3 starts in 1 s" in top
    assert "This write is already pinned to its partitions (p)" in top
    # ... and Airflow, asking the policy again for the same failure, gets the very same decision.
    assert op.retry_policy is not None
    again = op.retry_policy.evaluate(lost, try_number=1, max_tries=2)
    assert top.endswith(again.reason or "")

    second = make_context(task_id="merge_orders", try_number=2, max_tries=2, task_state_store=store)
    final = op.execute(second)
    assert second["ti"].pushed == {"deltacc_report": final}
    assert final["status"] == "committed" and final["tries_source"] == "task_state_store"
    one, two = final["tries"]
    assert (one["try_number"], one["status"], one["decision"]) == (1, "conflict_exhausted", "retry")
    assert one["reason"] == again.reason and one["attempts"][0]["conflict"]["partition"] == "[p=a]"
    assert (two["try_number"], two["status"], two["decision"], two["reason"]) == (2, "committed", None, None)
    assert report_tries(final) == [one, two]


def test_a_repeated_try_number_replaces_its_entry() -> None:
    store = FakeStateStore()
    context = make_context(try_number=1, task_state_store=store)
    add_try_to_history(context, _lost(), decision=TryDecision("retry", "r"))
    again = add_try_to_history(context, _committed(), decision=None)
    assert [(t["try_number"], t["status"]) for t in again["tries"]] == [(1, "committed")]


def test_without_a_task_state_store_the_report_says_it_lists_this_try_only() -> None:
    # No task state store, and no task runner to reach Variables through: only this try, said honestly.
    logger = MagicMock()
    report = add_try_to_history(make_context(try_number=2), _committed(), decision=None, logger=logger)
    assert report["tries_source"] == "this_try_only" and [t["try_number"] for t in report["tries"]] == [2]
    assert "lists this try only" in logger.warning.call_args.args[0]


def test_a_failing_state_store_falls_back_to_a_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk import Variable

    variables: dict[str, Any] = {}
    monkeypatch.setattr(
        Variable, "get", classmethod(lambda cls, key, default=None: variables.get(key, default))
    )
    monkeypatch.setattr(
        Variable, "set", classmethod(lambda cls, key, value, description=None: variables.update({key: value}))
    )
    monkeypatch.setattr(Variable, "delete", classmethod(lambda cls, key: variables.pop(key, None)))
    store = BrokenStateStore()
    first = add_try_to_history(
        make_context(try_number=1, task_state_store=store), _lost(), decision=TryDecision("retry", "r")
    )
    assert first["tries_source"] == "variable" and len(variables) == 1
    (key,) = variables
    assert key == "deltacc_tries.orders_dag.scheduled__2026-11-20T00:00:00+00:00.merge_orders.-1"
    final = add_try_to_history(
        make_context(try_number=2, task_state_store=store), _committed(), decision=None
    )
    assert [t["try_number"] for t in final["tries"]] == [1, 2]
    assert variables == {}, "the Variable is deleted once the task instance has ended"


def test_decision_outcomes() -> None:
    from airflow.sdk import RetryDecision

    assert TryDecision.from_retry_decision(RetryDecision.fail("x"), 1, 2) == TryDecision("fail", "x")
    assert TryDecision.from_retry_decision(RetryDecision.retry(reason="y"), 1, 2).action == "retry"
    assert TryDecision.from_retry_decision(RetryDecision.default(), 2, 2).action == "retry"
    assert TryDecision.from_retry_decision(RetryDecision.default(), 3, 2).action == "fail"
    assert TryDecision("fail", None).log_line(3, 2) == "Try 3 of 3 failed, Airflow decision FAIL"


def test_reports_from_before_tries_were_kept_are_their_own_only_try() -> None:
    old = _committed()
    assert report_tries(old) == [old]
