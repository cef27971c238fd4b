"""Session settings for one block over Spark Connect: restored afterwards, in as few round trips as the
protocol allows, and a block whose session was lost with its server fails with its own error, not with the
restore's."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.contract.txn import TxnIdentity
from airflow_provider_deltacc.engine.commits import USER_METADATA_CONF
from airflow_provider_deltacc.engine.confs import session_confs
from airflow_provider_deltacc.engine.txn import txn_confs

pytestmark = pytest.mark.unit


class LostSession(Exception):
    pass


class FakeAnswer:
    def __init__(self, pairs: list[tuple[str, str | None]]) -> None:
        self.pairs, self.warnings = pairs, []


class FakeClient:
    """Answers the Spark Connect config requests (``ConfigRequest.Operation``) as the server does."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.lost = False
        self.requests: list[str] = []

    def config(self, operation: Any) -> FakeAnswer:
        kind = operation.WhichOneof("op_type")
        self.requests.append(kind)
        if kind == "get_with_default":
            asked = operation.get_with_default.pairs
            return FakeAnswer([(p.key, self.values.get(p.key)) for p in asked])
        if self.lost:
            raise LostSession("[NO_ACTIVE_SESSION] No active Spark session found.")
        if kind == "set":
            self.values.update({p.key: p.value for p in operation.set.pairs})
        elif kind == "unset":
            for key in operation.unset.keys:
                self.values.pop(key, None)
        else:
            raise AssertionError(f"unexpected config request {kind}")
        return FakeAnswer([])


class FakeSession:
    """Read as a Spark Connect session (by its module), whose settings are all it has."""

    def __init__(self) -> None:
        self.client = FakeClient()


FakeSession.__module__ = "pyspark.sql.connect.session"


def test_the_blocks_own_error_wins_over_a_restore_on_a_lost_session() -> None:
    spark = FakeSession()
    lost = pytest.raises(RuntimeError, match=r"INVALID_HANDLE\.SESSION_CHANGED")
    with lost, session_confs(spark, {"k": "v"}):  # type: ignore[arg-type]
        spark.client.lost = True
        raise RuntimeError("[INVALID_HANDLE.SESSION_CHANGED] the server restarted")


def test_a_restore_that_fails_after_a_block_that_succeeded_is_raised() -> None:
    spark = FakeSession()
    with pytest.raises(LostSession), session_confs(spark, {"k": "v"}):  # type: ignore[arg-type]
        spark.client.lost = True


def test_settings_are_restored_after_the_block() -> None:
    spark = FakeSession()
    spark.client.values["k"] = "old"
    with session_confs(spark, {"k": "new", "j": "x"}):  # type: ignore[arg-type]
        assert spark.client.values == {"k": "new", "j": "x"}
    assert spark.client.values == {"k": "old"}


def test_a_writes_commit_tag_and_txn_identity_take_a_round_trip_per_step_not_per_setting() -> None:
    spark = FakeSession()
    spark.client.values[USER_METADATA_CONF] = "the user's own"
    confs = {USER_METADATA_CONF: "deltacc:tag", **txn_confs(TxnIdentity("a", 3))}
    with session_confs(spark, confs):  # type: ignore[arg-type]
        assert spark.client.values == confs
    # asked what was set, set the four, then put back the one that was set and unset the three that were not
    # (a request per setting and step would be twelve)
    assert spark.client.requests == ["get_with_default", "set", "set", "unset"]
    assert spark.client.values == {USER_METADATA_CONF: "the user's own"}
