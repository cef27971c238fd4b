"""Writers on S3, for real: Delta tables on an S3 API server (moto on 127.0.0.1), reached through an
Airflow ``aws`` connection (``aws_conn_id``), with the storage guard serializing the writers Delta's default
S3 log store cannot keep apart. Checked independently with delta-rs."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from deltalake import DeltaTable

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.windows import store_from_url
from tests.integration.object_storage.side_by_side import run_side_by_side, statuses
from tests.support.s3_server import SECRET_KEY, S3Server
from tests.unit.airflow_face.conftest import make_context

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration

SCHEMA = "id INT, amount INT"


def _rows(first: int, count: int, amount: int) -> dict[str, Any]:
    return {"kind": "rows", "rows": [[i, amount] for i in range(first, first + count)], "schema": SCHEMA}


def _read(s3: S3Server, table: str) -> DeltaTable:
    return DeltaTable(table.replace("s3a://", "s3://"), storage_options=s3.storage_options())


def test_concurrent_writers_on_s3_commit_exactly_once_one_at_a_time(
    spark: SparkSession, s3_server: S3Server, aws_conn_id: str, tmp_path: Path
) -> None:
    table = f"s3a://{s3_server.new_bucket()}/orders"
    store_url = f"sqlite:///{tmp_path / 'leases.db'}"
    common = {
        "table": table,
        "execution_mode": "in_process",
        "aws_conn_id": aws_conn_id,
        "lease_store_url": store_url,
        "unsafe_storage_wait_timeout": 240.0,
    }
    create = DeltaAppendOperator(task_id="create", source=_rows(0, 4, 0), create_if_missing=True, **common)
    assert create.execute(make_context(task_id="create"))["status"] == "committed"

    # Four writers race: two appends of new ids and two MERGEs updating different existing ids.
    writers: list[Any] = [
        DeltaAppendOperator(task_id="append_a", source=_rows(10, 3, 1), **common),
        DeltaAppendOperator(task_id="append_b", source=_rows(20, 3, 2), **common),
        DeltaMergeOperator(task_id="merge_c", source=_rows(0, 2, 3), keys=["id"], **common),
        DeltaMergeOperator(task_id="merge_d", source=_rows(2, 2, 4), keys=["id"], **common),
    ]
    outcomes = run_side_by_side(writers)
    assert statuses(outcomes) == {op.task_id: "committed" for op in writers}, outcomes
    for op in writers:
        assert outcomes[op.task_id]["storage_safety"]["guard"] == "exclusive_lease"

    # delta-rs, with its own credentials: every write is there once, in 5 commits.
    delta = _read(s3_server, table)
    assert delta.version() == 4
    rows = {r["id"]: r["amount"] for r in delta.to_pyarrow_table().to_pylist()}
    assert rows == {0: 3, 1: 3, 2: 4, 3: 4, 10: 1, 11: 1, 12: 1, 20: 2, 21: 2, 22: 2}
    txns = [(t["appId"], t["version"]) for c in s3_server.log_commits(table) for t in c["txn"]]
    assert len(txns) == 5 and len(set(txns)) == 5, txns

    # The storage guard held every writer alone: no two exclusive leases overlapped.
    with store_from_url(store_url) as store:
        spans = sorted((lease.acquired_at, lease.released_at) for lease in store.history(table))
    assert len(spans) >= 5
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end is not None and end <= start, spans

    # A rerun of a writer is answered by delta-rs from the S3 log, with the connection's options.
    again = DeltaAppendOperator(task_id="append_a", source=_rows(10, 3, 1), **common)
    assert again.execute(make_context(task_id="append_a"))["status"] == "skipped_duplicate"
    assert _read(s3_server, table).version() == 4


def test_a_missing_aws_connection_is_bad_input_and_nothing_is_written(
    spark: SparkSession, s3_server: S3Server, tmp_path: Path
) -> None:
    table = f"s3a://{s3_server.new_bucket()}/orders"
    op = DeltaAppendOperator(
        task_id="no_conn",
        table=table,
        source=_rows(0, 1, 0),
        create_if_missing=True,
        execution_mode="in_process",
        aws_conn_id="no_such_aws_conn",
        lease_store_url=f"sqlite:///{tmp_path / 'leases.db'}",
    )
    with pytest.raises(DeltaCCInputError) as raised:
        op.execute(make_context(task_id="no_conn"))
    assert raised.value.field == "aws_conn_id" and "no_such_aws_conn" in str(raised.value)
    assert "Contents" not in s3_server.client().list_objects_v2(Bucket=table.split("/")[2])
    assert SECRET_KEY not in str(raised.value)
