"""The Spark job's own storage check: unsafe S3 without ``storage_guard`` is refused; the session's effective
settings (the cluster's ``spark-defaults.conf`` included) count, not only the spec's."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.contract.storage_safety import DYNAMODB_LOG_STORE
from airflow_provider_deltacc.spark_job.main import UnsafeStorageError, check_storage_safety

pytestmark = pytest.mark.unit

TABLE = "s3a://lake/orders"


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class _Context:
    def __init__(self, values: dict[str, str]) -> None:
        self._conf = _Conf(values)

    def getConf(self) -> _Conf:
        return self._conf


class FakeSession:
    """What ``check_storage_safety`` reads: runtime confs and the SparkConf the driver started with."""

    def __init__(self, runtime: dict[str, str] | None = None, static: dict[str, str] | None = None) -> None:
        self.conf = _Conf(runtime or {})
        self.sparkContext = _Context(static or {})


def _spec(**extra: Any) -> Any:
    return parse_spec({"operation": "delete", "table": TABLE, "options": {"condition": "id = 1"}, **extra})


def test_unguarded_write_to_unsafe_s3_is_refused() -> None:
    with pytest.raises(UnsafeStorageError) as raised:
        check_storage_safety(FakeSession(), _spec())  # type: ignore[arg-type]
    assert raised.value.field == "storage_guard"
    message = str(raised.value)
    assert TABLE in message and f"spark.delta.logStore.s3a.impl={DYNAMODB_LOG_STORE}" in message


@pytest.mark.parametrize("guard", ["exclusive_lease", "override"])
def test_a_guarded_write_runs_and_the_report_says_so(guard: str) -> None:
    verdict = check_storage_safety(FakeSession(), _spec(storage_guard=guard))  # type: ignore[arg-type]
    assert verdict is not None and verdict["guard"] == guard and verdict["safe"] is False


@pytest.mark.parametrize(
    ("session", "spec_conf"),
    [
        (FakeSession(static={"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE}), {}),  # spark-defaults
        (FakeSession(runtime={"spark.delta.logStore.class": DYNAMODB_LOG_STORE}), {}),
        (FakeSession(), {"spark.delta.logStore.s3a.impl": DYNAMODB_LOG_STORE}),
    ],
)
def test_the_effective_log_store_makes_it_safe(session: FakeSession, spec_conf: dict[str, str]) -> None:
    assert check_storage_safety(session, _spec(spark_conf=spec_conf)) is None  # type: ignore[arg-type]


def test_safe_paths_and_vacuum_need_no_guard() -> None:
    local = parse_spec({"operation": "delete", "table": "/data/t", "options": {"condition": "true"}})
    assert check_storage_safety(FakeSession(), local) is None  # type: ignore[arg-type]
    vacuum = parse_spec({"operation": "vacuum", "table": TABLE})
    assert check_storage_safety(FakeSession(), vacuum) is None  # type: ignore[arg-type]


def test_storage_guard_values() -> None:
    with pytest.raises(SpecError) as raised:
        _spec(storage_guard="trust-me")
    assert raised.value.field == "storage_guard"
