"""One maintenance run's question to the gate, as plain data that travels from an operator to a trigger.

:class:`GateRequest` holds everything :func:`~airflow_provider_deltacc.gate.decision.decide_gate` needs except
the store, serializes to JSON-safe dicts (trigger kwargs are stored in Airflow's database), and adds one rule
the gate leaves to its callers: a maintenance run on explicit partitions that must cover all of them waits
until every one is closed, rather than going on the closed subset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import Any

from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits
from airflow_provider_deltacc.contract.op_kinds import MAINTENANCE_KINDS, OpKind
from airflow_provider_deltacc.gate.decision import GateDecision, decide_gate
from airflow_provider_deltacc.gate.declared import WriteWindow
from airflow_provider_deltacc.leases.conflicts import any_lease, maintenance_conflicts
from airflow_provider_deltacc.leases.lease import parse_op_kind
from airflow_provider_deltacc.leases.partitions import PartitionScope, format_scope, normalize_scope
from airflow_provider_deltacc.leases.store import ConflictPredicate, LeaseStore


def parse_windows(windows: Iterable[WriteWindow | Mapping[str, Any]] | None) -> tuple[WriteWindow, ...]:
    """Accept windows as :class:`WriteWindow` objects or their dict form (e.g. an Airflow Variable's JSON).

    :param windows: the operator's ``write_windows``.
    :raises ValueError: for an entry that is neither.
    """
    parsed: list[WriteWindow] = []
    for index, window in enumerate(windows or ()):
        if isinstance(window, WriteWindow):
            parsed.append(window)
        elif isinstance(window, Mapping):
            parsed.append(WriteWindow.from_dict(window))
        else:
            raise ValueError(
                f"write_windows[{index}]={window!r} must be a WriteWindow or a dict such as "
                "{'table': '/data/orders', 'cron': '0 2 * * *', 'duration_s': 3600}"
            )
    return tuple(parsed)


def parse_traits(traits: TableTraits | Mapping[str, Any] | None) -> TableTraits | None:
    """Accept traits as :class:`TableTraits` or a dict of its fields.

    :param traits: the operator's ``table_traits``.
    :raises ValueError: naming unknown fields.
    """
    if traits is None or isinstance(traits, TableTraits):
        return traits
    known = {f.name for f in fields(TableTraits)}
    unknown = sorted(set(traits) - known)
    if unknown:
        raise ValueError(f"table_traits has unknown fields {unknown}; the fields are {sorted(known)}")
    return TableTraits(**{key: bool(value) for key, value in traits.items()})


def parse_profile(profile: EngineProfile | str) -> EngineProfile:
    """Accept a profile or its value/name (``oss_serializable``, ``DATABRICKS_WRITE_SERIALIZABLE``).

    :param profile: the operator's ``profile``.
    :raises ValueError: naming the valid profiles.
    """
    if isinstance(profile, EngineProfile):
        return profile
    text = str(profile).strip()
    for member in EngineProfile:
        if text.lower() in (member.value, member.name.lower()):
            return member
    valid = ", ".join(sorted({member.value for member in EngineProfile}))
    raise ValueError(f"profile={profile!r} is not an engine profile; use one of {valid}")


@dataclass(frozen=True)
class GateRequest:
    """What a maintenance run asks the gate.

    :param table: the table's name or path, as the leases spell it.
    :param maintenance_op: OPTIMIZE, OPTIMIZE_ZORDER or VACUUM.
    :param windows: declared write windows.
    :param profile: the engine profile the writers commit with.
    :param traits: the table's traits.
    :param partitions: for OPTIMIZE, the candidate partitions; None for the whole table.
    :param require_all_partitions: go only when every candidate partition is closed (an OPTIMIZE of
        explicit partitions); False lets the gate go on the closed ones (``only_closed_partitions``).
    :param retention_hours: the VACUUM retention, None for the table's.
    :param table_retention_hours: the table's ``delta.deletedFileRetentionDuration`` in hours, if known.
    :param force: VACUUM even with an unsafe retention.
    :param expected_duration_s: how long the run is expected to take, so windows opening within it block.
    :param exclusive: the table's storage cannot exclude concurrent writers (see
        :mod:`airflow_provider_deltacc.contract.storage_safety`): wait for every live lease, not only
        conflicting ones.
    """

    table: str
    maintenance_op: OpKind
    windows: tuple[WriteWindow, ...] = ()
    profile: EngineProfile = EngineProfile.OSS_SERIALIZABLE
    traits: TableTraits | None = None
    partitions: PartitionScope = None
    require_all_partitions: bool = True
    retention_hours: float | None = None
    table_retention_hours: float | None = None
    force: bool = False
    expected_duration_s: float | None = field(default=None)
    exclusive: bool = False

    def __post_init__(self) -> None:
        op = parse_op_kind(self.maintenance_op, field="maintenance_op")
        if op not in MAINTENANCE_KINDS:
            names = ", ".join(sorted(kind.name for kind in MAINTENANCE_KINDS))
            raise ValueError(f"maintenance_op={op.name} is not maintenance; use one of {names}")
        object.__setattr__(self, "maintenance_op", op)
        object.__setattr__(self, "windows", parse_windows(self.windows))
        object.__setattr__(self, "profile", parse_profile(self.profile))
        object.__setattr__(self, "traits", parse_traits(self.traits))
        object.__setattr__(self, "partitions", normalize_scope(self.partitions))

    def decide(self, store: LeaseStore, now: datetime | None = None) -> GateDecision:
        """Ask the gate; logs the decision and its reason.

        :param store: the lease store.
        :param now: the time to decide for; None for the store's clock.
        """
        decision = decide_gate(
            self.table,
            self.maintenance_op,
            store=store,
            windows=self.windows,
            profile=self.profile,
            traits=self.traits,
            now=now,
            partitions=self.partitions,
            retention_hours=self.retention_hours,
            table_retention_hours=self.table_retention_hours,
            force=self.force,
            expected_duration=(
                timedelta(seconds=self.expected_duration_s) if self.expected_duration_s is not None else None
            ),
        )
        if (
            decision.go
            and self.require_all_partitions
            and self.partitions is not None
            and decision.closed_partitions != self.partitions
        ):
            closed = decision.closed_partitions or []
            still_open = [spec for spec in self.partitions if spec not in closed]
            return GateDecision(
                False,
                None,
                f"waiting: {self.maintenance_op.name} needs all of {format_scope(self.partitions)}; "
                f"{format_scope(still_open)} still open ({decision.reason})",
                decision.blocking,
                closed_partitions=closed,
                decided_at=decision.decided_at,
            )
        if decision.go and self.exclusive:
            live = store.active(self.table, now)
            if live:
                return GateDecision(
                    False,
                    None,
                    f"waiting: the table's storage cannot exclude concurrent writers, so "
                    f"{self.maintenance_op.name} waits for every live lease: "
                    + "; ".join(lease.describe() for lease in live),
                    [lease.describe() for lease in live],
                    decided_at=decision.decided_at,
                )
        return decision

    def lease_conflicts(self, partitions: PartitionScope) -> ConflictPredicate:
        """The predicate the run's own maintenance lease is acquired with, for the partitions it runs on.

        With ``exclusive`` (storage without a multi-writer log store) every live lease on the table blocks.

        :param partitions: the partitions the run will touch (the gate's closed ones), None for all.
        """
        if self.exclusive:
            return any_lease
        return maintenance_conflicts(
            self.maintenance_op, partitions, profile=self.profile, traits=self.traits
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict; :meth:`from_dict` reverses it."""
        return {
            "table": self.table,
            "maintenance_op": self.maintenance_op.value,
            "windows": [window.to_dict() for window in self.windows],
            "profile": self.profile.value,
            "traits": dict(vars(self.traits)) if self.traits is not None else None,
            "partitions": self.partitions,
            "require_all_partitions": self.require_all_partitions,
            "retention_hours": self.retention_hours,
            "table_retention_hours": self.table_retention_hours,
            "force": self.force,
            "expected_duration_s": self.expected_duration_s,
            "exclusive": self.exclusive,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateRequest:
        """Rebuild a request from :meth:`to_dict` output.

        :param data: the dict.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"gate request has unknown fields {unknown}; the fields are {sorted(known)}")
        return cls(**dict(data))


#: The shortest pause between two gate decisions, so a wait that is just ending does not spin.
MIN_POLL_S = 0.05


def poll_delay(decision: GateDecision, poll_interval_s: float, now: datetime | None = None) -> float:
    """How long to wait before asking the gate again: ``min(wait_until - now, poll_interval_s)``.

    Leases are usually released long before they expire, so the poll interval bounds the wait; a declared
    window that closes sooner is polled right when it closes.

    :param decision: the gate's last (waiting) decision.
    :param poll_interval_s: the longest pause.
    :param now: the current time; None for the decision's own time.
    """
    delay = float(poll_interval_s)
    reference = now or decision.decided_at
    if decision.wait_until is not None and reference is not None:
        delay = min(delay, (decision.wait_until - reference).total_seconds())
    return max(MIN_POLL_S, delay)
