"""``conflict_safe``'s arguments, checked before any Spark runs: the in-job retries are ``commit_retry`` (the
job spec's name); the name before the rename (``retry_policy``) is refused, naming the value and the new
name."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc import conflict_safe
from airflow_provider_deltacc.contract.commit_report import CommitReport
from airflow_provider_deltacc.contract.spec import JobSpec
from airflow_provider_deltacc.engine import run
from airflow_provider_deltacc.spark_job import main

pytestmark = pytest.mark.unit

CALLS = [
    (conflict_safe.conflict_safe_merge, {"keys": ["id"]}),
    (conflict_safe.conflict_safe_append, {}),
    (conflict_safe.conflict_safe_overwrite_partitions, {}),
]


def _source(spark: Any) -> Any:
    raise AssertionError("not called: the run is replaced")


@pytest.mark.parametrize(("call", "options"), CALLS, ids=lambda c: getattr(c, "__name__", ""))
def test_retry_policy_is_refused_naming_the_value_and_the_new_name(
    call: Any, options: dict[str, Any]
) -> None:
    with pytest.raises(TypeError) as info:
        call(None, "/lake/orders", _source, retry_policy={"max_attempts": 3}, **options)
    message = str(info.value)
    assert "retry_policy={'max_attempts': 3}" in message
    assert "it is called commit_retry: pass commit_retry={'max_attempts': 3}" in message
    assert message.startswith(call.__name__)


def test_an_unknown_argument_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['retries'\]"):
        conflict_safe.conflict_safe_append(None, "/lake/orders", _source, retries=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(("call", "options"), CALLS, ids=lambda c: getattr(c, "__name__", ""))
def test_commit_retry_reaches_the_job_spec(
    call: Any, options: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[JobSpec] = []

    def fake_run(spark: Any, spec: JobSpec, *, logger: Any = None) -> CommitReport:
        seen.append(spec)
        return CommitReport(operation=spec.operation.upper(), table=spec.table.name)

    monkeypatch.setattr(run, "run_operation", fake_run)
    monkeypatch.setattr(main, "check_storage_safety", lambda spark, spec: None)
    call(None, "/lake/orders", _source, commit_retry={"max_attempts": 3, "min_wait_s": 0.5}, **options)
    (spec,) = seen
    assert spec.commit_retry.max_attempts == 3
    assert spec.commit_retry.min_wait_s == 0.5
