"""Bank transfers as mapped MERGE tasks over Spark Connect; some die on their first try (the test's plan)."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import dag

from airflow_provider_deltacc.operators import DeltaAppendOperator
from tests.chaos.airflow_faults import CONNECT_CONN_ID, LEASES_CONN_ID, ChaosMergeOperator, load_plan

PLAN = load_plan()
TABLE = PLAN["table"]
ACCOUNTS_SCHEMA = "branch STRING, account STRING, balance BIGINT"
LEGS_SCHEMA = "branch STRING, account STRING, delta BIGINT"


def legs(transfer: dict[str, str | int]) -> dict[str, object]:
    """The MERGE source of a transfer: minus the amount on one account, plus on the other."""
    amount = int(transfer["amount"])
    rows = [
        {"branch": transfer["src_branch"], "account": transfer["src"], "delta": -amount},
        {"branch": transfer["dst_branch"], "account": transfer["dst"], "delta": amount},
    ]
    return {"kind": "rows", "rows": rows, "schema": LEGS_SCHEMA}


@dag(
    dag_id="chaos_transfers",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_tasks=16,
    default_args={
        "execution_mode": "spark_connect",
        "conn_id": CONNECT_CONN_ID,
        "lease_store_conn_id": LEASES_CONN_ID,
        "retries": PLAN["retries"],
        "retry_delay": timedelta(seconds=3),
        "lease_ttl": PLAN["lease_ttl_s"],
    },
)
def chaos_transfers() -> None:
    accounts = [{"branch": b, "account": a, "balance": n} for b, a, n in PLAN["accounts"]]
    open_accounts = DeltaAppendOperator(
        task_id="open_accounts",
        table=TABLE,
        source={"kind": "rows", "rows": accounts, "schema": ACCOUNTS_SCHEMA},
        partition_by=["branch"],
        txn_app_id="chaos/open_accounts",
        txn_version=1,
    )
    transfers = ChaosMergeOperator.partial(
        task_id="transfer",
        table=TABLE,
        keys=["branch", "account"],  # pinned to the branches of the two accounts
        when_matched=[{"action": "update", "set": {"balance": "t.balance + s.delta"}}],
        when_not_matched=[],
        commit_retry={"max_attempts": 12, "min_wait_s": 0.05, "max_wait_s": 1.0},
    ).expand(source=[legs(t) for t in PLAN["transfers"]])
    open_accounts >> transfers


chaos_transfers()
