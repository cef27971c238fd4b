"""The advisor's answer for one pair: verdict, exceptions, a concrete reason and the fix."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from airflow_provider_deltacc.conflict_matrix import Verdict
from airflow_provider_deltacc.contract.op_kinds import OpKind


class FindingLevel(StrEnum):
    """The advisor's verdict for a pair, worst first.

    - ``will``: whenever one is in flight while the other commits, it fails (no data dependence left).
    - ``can``: it fails when they touch the same files or partitions, which only the run decides.
    - ``hazard``: no conflict exception, but a danger (VACUUM deleting files a writer still needs).
    - ``cannot``: no interleaving makes either fail.
    """

    WILL = "will"
    CAN = "can"
    HAZARD = "hazard"
    CANNOT = "cannot"

    @property
    def rank(self) -> int:
        """0 for the worst (``will``)."""
        return _RANKS[self]

    @property
    def text(self) -> str:
        """How the table prints it."""
        return {"will": "will conflict", "can": "can conflict", "hazard": "hazard", "cannot": "cannot"}[
            self.value
        ]


_RANKS = {level: index for index, level in enumerate(FindingLevel)}


@dataclass(frozen=True)
class Finding:
    """One pair of tasks that can run at the same time on one table, judged.

    :param level: the verdict.
    :param table: the table.
    :param task_a: ``dag_id.task_id`` of one task.
    :param task_b: ``dag_id.task_id`` of the other (the same for a task against itself).
    :param op_a: its operation, e.g. ``MERGE without partition pin``.
    :param op_b: the other's.
    :param kind_a: the conflict-matrix operation of ``task_a``.
    :param kind_b: the conflict-matrix operation of ``task_b``.
    :param exceptions: the Delta exceptions the loser can see.
    :param losers: the tasks that can fail.
    :param reason: the matrix's reason made concrete.
    :param fixes: what to change, best first.
    :param timing: why they can run at the same time.
    :param assumptions: what had to be assumed (templated or mapped arguments).
    :param verdict: the conflict matrix's verdict behind it.
    :param observed: filled in by the observed-vs-predicted step.
    """

    level: FindingLevel
    table: str
    task_a: str
    task_b: str
    op_a: str
    op_b: str
    kind_a: OpKind
    kind_b: OpKind
    exceptions: tuple[str, ...]
    losers: tuple[str, ...]
    reason: str
    fixes: tuple[str, ...]
    timing: str
    assumptions: tuple[str, ...]
    verdict: Verdict
    observed: dict[str, Any] = field(default_factory=dict)

    @property
    def tasks(self) -> frozenset[str]:
        """The one or two task keys."""
        return frozenset({self.task_a, self.task_b})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict."""
        return {
            "level": self.level.value,
            "table": self.table,
            "task_a": self.task_a,
            "task_b": self.task_b,
            "op_a": self.op_a,
            "op_b": self.op_b,
            "kind_a": self.kind_a.value,
            "kind_b": self.kind_b.value,
            "exceptions": list(self.exceptions),
            "losers": list(self.losers),
            "reason": self.reason,
            "fixes": list(self.fixes),
            "timing": self.timing,
            "assumptions": list(self.assumptions),
            "matrix": {
                "level": self.verdict.level.value,
                "profile": self.verdict.profile.value,
                "rules": list(self.verdict.rules),
                "source": self.verdict.source,
            },
            "observed": dict(self.observed),
        }
