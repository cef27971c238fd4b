"""A block whose session was lost with its server fails with its own error, not with the restore's."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.engine.confs import session_confs

pytestmark = pytest.mark.unit


class LostSession(Exception):
    pass


class FakeConf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.lost = False

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        if self.lost:
            raise LostSession("[NO_ACTIVE_SESSION] No active Spark session found.")
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.set(key, "")
        del self.values[key]


class FakeSession:
    """Read as a Spark Connect session (by its module), whose settings are all it has."""

    def __init__(self) -> None:
        self.conf = FakeConf()


FakeSession.__module__ = "pyspark.sql.connect.session"


def test_the_blocks_own_error_wins_over_a_restore_on_a_lost_session() -> None:
    spark = FakeSession()
    lost = pytest.raises(RuntimeError, match=r"INVALID_HANDLE\.SESSION_CHANGED")
    with lost, session_confs(spark, {"k": "v"}):  # type: ignore[arg-type]
        spark.conf.lost = True
        raise RuntimeError("[INVALID_HANDLE.SESSION_CHANGED] the server restarted")


def test_a_restore_that_fails_after_a_block_that_succeeded_is_raised() -> None:
    spark = FakeSession()
    with pytest.raises(LostSession), session_confs(spark, {"k": "v"}):  # type: ignore[arg-type]
        spark.conf.lost = True


def test_settings_are_restored_after_the_block() -> None:
    spark = FakeSession()
    spark.conf.values["k"] = "old"
    with session_confs(spark, {"k": "new", "j": "x"}):  # type: ignore[arg-type]
        assert spark.conf.values == {"k": "new", "j": "x"}
    assert spark.conf.values == {"k": "old"}
