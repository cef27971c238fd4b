"""The in-process mode's session: py4j's protocol log (every command sent to the JVM, values included) is
kept from the spec's secrets before the session starts, as for a Spark driver's; a missing jar cache is bad
input naming the cache."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError, InputError
from airflow_provider_deltacc.spark_jars import local_session
from airflow_provider_deltacc.spark_jars.delta_jars import JAR_CACHE_ENV

pytestmark = pytest.mark.unit


@pytest.fixture
def py4j_debug() -> Any:
    logger = logging.getLogger("py4j")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield logger
    logger.setLevel(level)


@pytest.mark.parametrize(
    ("spark_conf", "level"),
    [
        ({"spark.hadoop.fs.s3a.secret.key": "wJalrXUtnFEMI"}, logging.INFO),  # secrets: py4j's log kept quiet
        ({"spark.app.name": "orders"}, logging.DEBUG),  # none: py4j's log left alone
    ],
    ids=["secrets", "no-secrets"],
)
def test_py4js_log_is_kept_from_the_specs_secrets_before_the_session_starts(
    spark_conf: dict[str, str], level: int, py4j_debug: logging.Logger, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    monkeypatch.setattr(
        local_session, "local_delta_session", lambda **kwargs: seen.append(py4j_debug.getEffectiveLevel())
    )
    local_session.in_process_session(spark_conf)
    assert seen == [level]


def test_a_missing_jar_cache_is_bad_input_naming_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(**kwargs: Any) -> None:
        raise DeltaJarsMissingError("the Delta jars are not in the cache: fetch them with ...")

    monkeypatch.setattr(local_session, "local_delta_session", missing)
    with pytest.raises(InputError) as raised:
        local_session.in_process_session(None)
    assert raised.value.field == JAR_CACHE_ENV and "not in the cache" in raised.value.message
