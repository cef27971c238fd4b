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


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("last_newline", [True, False], ids=["ended", "unended"])
@pytest.mark.parametrize("position", [0, 500, 1000])
def test_the_identity_is_found_wherever_its_line_is_among_many_files(
    position: int, newline: str, last_newline: bool
) -> None:
    adds = [
        json.dumps({"add": {"path": f"txn={i}/part-{i}.parquet", "partitionValues": {"txn": str(i)}}})
        for i in range(1000)
    ]
    lines = [*adds[:position], json.dumps({"txn": {"appId": "a", "version": 7}}), *adds[position:]]
    commit = newline.join(lines) + (newline if last_newline else "")
    assert records_txn(commit, "a", 7)
    assert not records_txn(commit, "a", 8)
