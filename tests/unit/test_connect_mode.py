"""pyspark's process-wide Spark Connect mark: held while Connect operations run, in any number of threads,
and put back as it was when the last one ends."""

from __future__ import annotations

import os
import threading

import pytest

from airflow_provider_deltacc.spark_jars.connect_mode import (
    CONNECT_MODE_ENV,
    connect_session_keeping_mark,
    spark_connect_code,
)

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _unmarked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CONNECT_MODE_ENV, raising=False)


def test_inside_the_block_pyspark_builds_spark_connect_columns() -> None:
    from pyspark.sql import functions as F
    from pyspark.sql import is_remote

    with spark_connect_code():
        assert is_remote()
        column = F.when(F.col("id") > F.lit(1), "big").otherwise("small")
        assert type(column).__module__.startswith("pyspark.sql.connect")
    assert not is_remote() and CONNECT_MODE_ENV not in os.environ
    with pytest.raises(AssertionError):  # no JVM, no mark: pyspark's classic path has no SparkContext
        F.col("id")


def test_the_mark_stays_until_the_last_of_several_threads_leaves() -> None:
    entered = threading.Barrier(3)
    leave = [threading.Event() for _ in range(3)]
    seen: list[bool] = []

    def operation(index: int) -> None:
        with spark_connect_code():
            entered.wait()
            leave[index].wait()
            seen.append(CONNECT_MODE_ENV in os.environ)

    threads = [threading.Thread(target=operation, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for index, thread in enumerate(threads):
        leave[index].set()
        thread.join()
        assert (CONNECT_MODE_ENV in os.environ) == (index < 2)
    assert seen == [True, True, True]


def test_a_mark_set_before_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONNECT_MODE_ENV, "app")
    with spark_connect_code():
        assert os.environ[CONNECT_MODE_ENV] == "app"
    assert os.environ[CONNECT_MODE_ENV] == "app"


def test_creating_a_session_neither_leaves_the_mark_nor_takes_it_from_a_running_operation() -> None:
    def create() -> str:
        os.environ[CONNECT_MODE_ENV] = "1"  # what pyspark does when it builds a Connect session
        return "session"

    assert connect_session_keeping_mark(create) == "session"
    assert CONNECT_MODE_ENV not in os.environ
    with spark_connect_code():
        connect_session_keeping_mark(create)
        assert CONNECT_MODE_ENV in os.environ
    assert CONNECT_MODE_ENV not in os.environ
