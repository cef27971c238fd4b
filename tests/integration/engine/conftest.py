"""The engine's behavioural tests run on both kinds of session the engine serves.

``classic``: the shared local session of the test run (py4j, a JVM in this process). ``connect``: a session
of its own on the test run's Spark Connect server, as a task in ``execution_mode="spark_connect"`` gets one.
A test that checks something only a classic session has (py4j, job groups) is marked ``classic_session`` and
runs once; a test that parametrizes ``session_kind`` itself picks its own cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SESSION_KINDS = ("classic", "connect")


def _parametrizes_session_kind(metafunc: pytest.Metafunc) -> bool:
    """The test lists its own ``session_kind`` cases (e.g. pairwise with its other parameters)."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if "session_kind" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "session_kind" in metafunc.fixturenames and not _parametrizes_session_kind(metafunc):
        classic_only = metafunc.definition.get_closest_marker("classic_session") is not None
        connect_only = metafunc.definition.get_closest_marker("connect_session") is not None
        kinds = ["classic"] if classic_only else ["connect"] if connect_only else list(SESSION_KINDS)
        metafunc.parametrize("session_kind", kinds)


@pytest.fixture
def spark(
    local_spark: SparkSession, session_kind: str, request: pytest.FixtureRequest
) -> Iterator[SparkSession]:
    """The session under test: the run's classic session, or a new Spark Connect session."""
    if session_kind == "classic":
        yield local_spark
        return
    session = request.getfixturevalue("spark_connect_server").session()
    yield session
    session.stop()


@pytest.fixture
def new_session(
    local_spark: SparkSession, session_kind: str, request: pytest.FixtureRequest
) -> Iterator[Callable[[], SparkSession]]:
    """Sessions for concurrent operations, one per caller, as every task gets its own: the classic session
    (the engine gives each operation a child session of it), or a new Spark Connect session each call."""
    opened: list[SparkSession] = []

    def open_one() -> SparkSession:
        if session_kind == "classic":
            return local_spark
        session = request.getfixturevalue("spark_connect_server").session()
        opened.append(session)
        return session

    yield open_one
    for session in opened:
        session.stop()
