"""Reading a commit file for the txn identity it records (how a skipped duplicate finds its own commit)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_deltacc.contract.commits import records_txn

pytestmark = pytest.mark.unit

COMMIT = "\n".join(
    json.dumps(action)
    for action in (
        {"commitInfo": {"operation": "MERGE", "userMetadata": "deltacc:abc", "txnId": "x"}},
        {"txn": {"appId": "chaos/transfer/t0001", "version": 1, "lastUpdated": 1}},
        {"add": {"path": "part-0.parquet", "partitionValues": {"txn": "1"}, "dataChange": True}},
    )
)


def test_the_commit_records_its_own_identity() -> None:
    assert records_txn(COMMIT, "chaos/transfer/t0001", 1)


@pytest.mark.parametrize(
    ("app_id", "version"),
    [("chaos/transfer/t0001", 2), ("chaos/transfer/t0002", 1), ("chaos/transfer/t000", 1)],
)
def test_other_identities_do_not_match(app_id: str, version: int) -> None:
    assert not records_txn(COMMIT, app_id, version)


def test_a_commit_without_txn_records_nothing() -> None:
    assert not records_txn('{"commitInfo": {"operation": "WRITE", "note": "\\"txn\\""}}', "a", 1)
