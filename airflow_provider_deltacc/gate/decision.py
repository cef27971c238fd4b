"""The maintenance gate: may OPTIMIZE or VACUUM run on a table now, and if not, until when and why.

The gate is advisory: between its "go" and the maintenance run's own lease another writer may start.
The run therefore acquires its maintenance lease with :func:`maintenance_conflicts` (atomic in the
store) and goes back to the gate if that is refused.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.op_kinds import MAINTENANCE_KINDS, OpKind
from airflow_provider_deltacc.gate.declared import WriteWindow, windows_for
from airflow_provider_deltacc.leases.clock import format_hhmm, require_aware
from airflow_provider_deltacc.leases.conflicts import Scope, clash
from airflow_provider_deltacc.leases.lease import Lease, parse_op_kind
from airflow_provider_deltacc.leases.partitions import (
    PartitionSpec,
    format_scope,
    format_spec,
    normalize_scope,
)
from airflow_provider_deltacc.leases.store import LeaseStore

log = logging.getLogger(__name__)

#: Delta's default ``delta.deletedFileRetentionDuration`` (7 days), assumed when the caller gives none.
DELTA_DEFAULT_RETENTION_HOURS = 168.0

#: How many blockers a reason names before it says "and N more".
_REASON_LIMIT = 3


@dataclass(frozen=True)
class GateDecision:
    """The gate's answer.

    :param go: True if the maintenance may start now (on ``closed_partitions`` when those are given).
    :param wait_until: when waiting: when every current blocker is over unless a lease is renewed (the latest
        window end or lease expiry). Leases are usually released earlier, so poll at least every poll
        interval rather than sleeping until then. None when going or refused.
    :param reason: one line for the log and the task instance, e.g. ``waiting: MERGE lease on ...``;
        the times in it are UTC.
    :param blocking: one description per lease or window it waits for (or that closes a partition).
    :param closed_partitions: of the candidate partitions passed to OPTIMIZE, those no conflicting lease or
        window touches; None when no candidates were passed.
    :param refused: True when the request is unsafe (VACUUM retention) and waiting would not help.
    :param decided_at: the time the decision was made for.
    """

    go: bool
    wait_until: datetime | None
    reason: str
    blocking: list[str] = field(default_factory=list)
    closed_partitions: list[PartitionSpec] | None = None
    refused: bool = False
    decided_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (for XCom and trigger payloads); :meth:`from_dict` reverses it."""
        return {
            "go": self.go,
            "wait_until": self.wait_until.isoformat() if self.wait_until is not None else None,
            "reason": self.reason,
            "blocking": list(self.blocking),
            "closed_partitions": self.closed_partitions,
            "refused": self.refused,
            "decided_at": self.decided_at.isoformat() if self.decided_at is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateDecision:
        """Rebuild a decision from :meth:`to_dict` output.

        :param data: the dict.
        """

        def when(key: str) -> datetime | None:
            value = data.get(key)
            return datetime.fromisoformat(value) if value else None

        return cls(
            go=bool(data["go"]),
            wait_until=when("wait_until"),
            reason=str(data["reason"]),
            blocking=list(data.get("blocking") or []),
            closed_partitions=normalize_scope(data.get("closed_partitions")),
            refused=bool(data.get("refused", False)),
            decided_at=when("decided_at"),
        )


@dataclass(frozen=True)
class _Blocker:
    op_kind: OpKind
    scope: Scope
    until: datetime
    text: str


def _lease_text(lease: Lease, now: datetime) -> str:
    since, expires = format_hhmm(lease.acquired_at, now), format_hhmm(lease.expires_at, now)
    return f"{lease.describe()} since {since} (expires {expires})"


def _window_text(window: WriteWindow, start: datetime, end: datetime, now: datetime) -> str:
    if start > now:
        return f"{window.name} opens at {format_hhmm(start, now)} (until {format_hhmm(end, now)})"
    return f"{window.name} until {format_hhmm(end, now)}"


def _join(texts: list[str]) -> str:
    shown = "; ".join(texts[:_REASON_LIMIT])
    more = len(texts) - _REASON_LIMIT
    return f"{shown}; and {more} more" if more > 0 else shown


def _retention_refusal(
    retention_hours: float | None,
    table_retention_hours: float | None,
    active: list[Lease],
    now: datetime,
) -> str | None:
    """Why a VACUUM retention is unsafe, or None if it is safe (or left to the table's own setting)."""
    if retention_hours is None:
        return None
    if not math.isfinite(retention_hours) or retention_hours < 0:
        raise ValueError(f"retention_hours={retention_hours!r} must be a non-negative number of hours")
    table_hours = (
        table_retention_hours if table_retention_hours is not None else DELTA_DEFAULT_RETENTION_HOURS
    )
    source = (
        "delta.deletedFileRetentionDuration"
        if table_retention_hours is not None
        else "Delta's default; pass table_retention_hours for the table's delta.deletedFileRetentionDuration"
    )
    if retention_hours < table_hours:
        return (
            f"VACUUM retention {retention_hours:g} h is shorter than the table's retention of "
            f"{table_hours:g} h ({source}): it would delete files that snapshots younger than "
            f"{table_hours:g} h, and running readers and writers, still use. Use retention_hours >= "
            f"{table_hours:g} (or leave it unset to use the table's), or pass force=True to accept that."
        )
    writers = [lease for lease in active if lease.op_kind is not OpKind.VACUUM]
    if writers:
        oldest = min(writers, key=lambda lease: lease.acquired_at)
        age_hours = (now - oldest.acquired_at).total_seconds() / 3600
        if retention_hours < age_hours:
            return (
                f"VACUUM retention {retention_hours:g} h is shorter than the age of the oldest active lease, "
                f"{oldest.describe()} since {format_hhmm(oldest.acquired_at, now)} ({age_hours:.1f} h): it "
                "could delete files that writer has written but not committed, or that its snapshot reads. "
                f"Use retention_hours >= {math.ceil(age_hours):d}, or pass force=True to accept that."
            )
    return None


def decide_gate(
    table: str,
    maintenance_op: OpKind | str,
    *,
    store: LeaseStore,
    windows: Iterable[WriteWindow] = (),
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
    now: datetime | None = None,
    partitions: Iterable[Mapping[str, object]] | None = None,
    retention_hours: float | None = None,
    table_retention_hours: float | None = None,
    force: bool = False,
    expected_duration: timedelta | None = None,
) -> GateDecision:
    """Decide whether ``maintenance_op`` may run on ``table`` now; log the decision and its reason at INFO.

    It waits only for active leases and declared windows that can conflict with the operation per the
    conflict matrix and the partitions: OPTIMIZE never waits for blind appends, nor for writers pinned to
    other partitions. VACUUM waits for every active lease and window on the table, and refuses a retention
    shorter than the table's or than the age of the oldest active lease unless ``force``.

    :param table: the Delta table's name or path, as the leases spell it.
    :param maintenance_op: OPTIMIZE, OPTIMIZE_ZORDER or VACUUM.
    :param store: the lease store.
    :param windows: declared write windows (those for other tables are ignored).
    :param profile: the engine profile the writers commit with.
    :param traits: the table's traits (partitioned, deletion vectors, ...).
    :param now: the time to decide for; None for the store's clock.
    :param partitions: for OPTIMIZE, the candidate partitions: the decision goes if some are closed and
        returns them in ``closed_partitions``. None for the whole table. Not allowed for VACUUM.
    :param retention_hours: the VACUUM retention (RETAIN n HOURS), None for the table's own.
    :param table_retention_hours: the table's ``delta.deletedFileRetentionDuration`` in hours; None assumes
        Delta's default of 168.
    :param force: run VACUUM even with an unsafe retention (it still waits for writers).
    :param expected_duration: how long the maintenance is expected to take: a conflicting window that opens
        within it also blocks, so the run ends before the window starts.
    :raises ValueError: for a non-maintenance operation or partitions with VACUUM.
    """
    op = parse_op_kind(maintenance_op, field="maintenance_op")
    if op not in MAINTENANCE_KINDS:
        names = ", ".join(sorted(kind.name for kind in MAINTENANCE_KINDS))
        raise ValueError(f"maintenance_op={op.name} is not maintenance; the gate decides for {names}")
    scope = normalize_scope(partitions, field="partitions")
    if op is OpKind.VACUUM and scope is not None:
        raise ValueError(f"partitions={scope!r} with VACUUM: VACUUM always covers the whole table; pass None")
    now = require_aware(now, field="now") if now is not None else store.now()
    active = store.active(table, now)

    forced = ""
    if op is OpKind.VACUUM:
        refusal = _retention_refusal(retention_hours, table_retention_hours, active, now)
        if refusal is not None and not force:
            return _log(
                table, op, GateDecision(False, None, f"refused: {refusal}", refused=True, decided_at=now)
            )
        if refusal is not None:
            log.warning("gate: VACUUM on %s forced despite: %s", table, refusal)
            forced = f" [force=True overrides: {refusal}]"

    blockers, ignored = _blockers(
        op, scope, active, windows_for(table, windows), now, expected_duration, profile, traits
    )
    if not blockers:
        note = f" (not waiting for {_join(ignored)}: they cannot conflict with {op.name})" if ignored else ""
        reason = (
            f"go: nothing active on {table} conflicts with {op.name} on {format_scope(scope)}{note}{forced}"
        )
        return _log(table, op, GateDecision(True, None, reason, closed_partitions=scope, decided_at=now))

    texts = [blocker.text for blocker in blockers]
    if scope is not None:
        closed = [
            spec
            for spec in scope
            if not any(
                clash(op, [spec], b.op_kind, b.scope, profile=profile, traits=traits).blocks for b in blockers
            )
        ]
        if closed:
            skipped = [format_spec(spec) for spec in scope if spec not in closed]
            reason = (
                f"go: {op.name} on the closed partitions {format_scope(closed)}; skipping "
                f"{', '.join(skipped)} for {_join(texts)}"
            )
            decision = GateDecision(True, None, reason, texts, closed_partitions=closed, decided_at=now)
            return _log(table, op, decision)
    wait_until = max(blocker.until for blocker in blockers)
    decision = GateDecision(
        False,
        wait_until,
        f"waiting: {_join(texts)}{forced}",
        texts,
        closed_partitions=[] if scope else None,
        decided_at=now,
    )
    return _log(table, op, decision)


def _blockers(
    op: OpKind,
    scope: Scope,
    active: list[Lease],
    windows: list[WriteWindow],
    now: datetime,
    expected_duration: timedelta | None,
    profile: EngineProfile,
    traits: TableTraits | None,
) -> tuple[list[_Blocker], list[str]]:
    """The leases and windows ``op`` must wait for, and descriptions of those it may ignore."""
    blockers: list[_Blocker] = []
    ignored: list[str] = []
    for lease in active:
        text = _lease_text(lease, now)
        if clash(op, scope, lease.op_kind, lease.partitions, profile=profile, traits=traits).blocks:
            blockers.append(_Blocker(lease.op_kind, lease.partitions, lease.expires_at, text))
        else:
            ignored.append(text)
    horizon = now + expected_duration if expected_duration is not None else now
    for window in windows:
        span = window.next_active(now) if expected_duration is not None else window.active_at(now)
        if span is None or span[0] > horizon:
            continue
        text = _window_text(window, span[0], span[1], now)
        if clash(op, scope, window.op_kind, window.partition_values, profile=profile, traits=traits).blocks:
            blockers.append(_Blocker(window.op_kind, window.partition_values, span[1], text))
        else:
            ignored.append(text)
    return blockers, ignored


def _log(table: str, op: OpKind, decision: GateDecision) -> GateDecision:
    log.info("gate: %s on %s: %s", op.name, table, decision.reason)
    return decision
