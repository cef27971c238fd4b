"""Commit reports shaped as the operators push them, built from the provider's own pieces: ``CommitReport``
for each try, the retry policy's reason for a lost try, and ``try_entry`` for the list of tries.

Used by the UI's unit tests and by ``bench/ui.py`` (which fills a metadata DB with thousands of them).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow_provider_deltacc.contract.commit_report import AttemptRecord, CommitReport
from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind
from airflow_provider_deltacc.exceptions import DeltaConflictRetryable
from airflow_provider_deltacc.retries.policy import DeltaConflictRetryPolicy
from airflow_provider_deltacc.retries.tries import TryDecision, try_entry

_POLICY = DeltaConflictRetryPolicy(min_delay=timedelta(seconds=30), max_delay=timedelta(seconds=30), jitter=0)


def lost_try(
    table: str,
    *,
    started_at: float,
    kind: ConflictKind = ConflictKind.APPEND,
    partition: str | None = "[p=a]",
    winning_version: int | None = 3,
    winning_operation: str | None = "WRITE",
    pinned_columns: tuple[str, ...] = ("p",),
    wasted_s: float = 0.5,
) -> dict[str, Any]:
    """One try of a MERGE that lost its only attempt to a conflict (``conflict_exhausted``)."""
    conflict = Conflict(
        kind=kind,
        table=f"delta.`file:{table}`",
        winning_version=winning_version,
        winning_operation=winning_operation,
        partition=partition,
        message=f"{kind.name} conflict",
    )
    attempt = AttemptRecord(1, started_at, wasted_s, "conflict", conflict=conflict, wasted_s=wasted_s)
    report = CommitReport(
        operation="MERGE",
        table=table,
        status="conflict_exhausted",
        attempts=[attempt],
        max_attempts=1,
        pinned_columns=list(pinned_columns),
    )
    return report.to_dict()


def committed_try(
    table: str, *, started_at: float, version: int, txn_app_id: str | None = None
) -> dict[str, Any]:
    """One try of a MERGE that committed ``version`` on its first attempt."""
    attempt = AttemptRecord(1, started_at, 0.8, "committed")
    report = CommitReport(
        operation="MERGE",
        table=table,
        status="committed",
        table_version=version,
        attempts=[attempt],
        txn_app_id=txn_app_id,
        txn_version=1 if txn_app_id else None,
        max_attempts=1,
        pinned_columns=["p"],
    )
    return report.to_dict()


def retry_reason(lost: dict[str, Any], *, try_number: int = 1, max_tries: int = 2) -> str:
    """The reason the retry policy gives Airflow for ``lost`` (a ``conflict_exhausted`` try)."""
    decision = _POLICY.evaluate(DeltaConflictRetryable("outlasted", report=lost), try_number, max_tries)
    return str(decision.reason)


def final_report(*tries: tuple[dict[str, Any], TryDecision | None]) -> dict[str, Any]:
    """The ``deltacc_report`` XCom of the last try: its report plus every try, as ``add_try_to_history``
    pushes it."""
    entries = [try_entry(report, try_number=n, decision=d) for n, (report, d) in enumerate(tries, start=1)]
    return {**tries[-1][0], "tries": entries, "tries_source": "task_state_store"}


def retried_then_committed(
    table: str, *, started_at: float, version: int, lost: dict[str, Any] | None = None
) -> tuple[dict[str, Any], str]:
    """A task instance whose try 1 lost a conflict (Airflow retried it) and whose try 2 committed: its
    final report and try 1's retry reason."""
    lost = lost or lost_try(table, started_at=started_at, winning_version=version - 1)
    reason = retry_reason(lost)
    report = final_report(
        (lost, TryDecision("retry", reason)),
        (committed_try(table, started_at=started_at + 60, version=version), None),
    )
    return report, reason
