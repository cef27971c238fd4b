"""The report that spans tries: every try's commit report, with the retry decision and its reason.

XCom is cleared when a try starts, so a try's report would be gone by the next try. Each try therefore adds
its entry to state that outlives the try, and the report it pushes lists every try so far:

- Airflow 3.3's task state store (``context["task_state_store"]``, scoped to the task instance, shared by
  its tries), where the task runner offers it;
- else an Airflow Variable named after the task instance (deleted again when the task instance ends);
- else only this try, and the report says so (``tries_source: this_try_only``).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.sdk import Context, RetryDecision

#: The XCom key of the commit report a Delta task pushes (one report, listing every try).
REPORT_XCOM_KEY = "deltacc_report"
TRIES_KEY = "deltacc_tries"
#: Keys of the final report that describe the tries, not the try.
_SPAN_KEYS = ("tries", "tries_source")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TryDecision:
    """What Airflow does after a failed try, and why.

    :param action: ``retry`` or ``fail``: what happens next.
    :param reason: the retry policy's reason (None when the policy gave none).
    """

    action: str
    reason: str | None

    @classmethod
    def from_retry_decision(cls, decision: RetryDecision, try_number: int, max_tries: int) -> TryDecision:
        """Read a policy's decision: DEFAULT means Airflow's own rule (retry while tries are left)."""
        action = str(getattr(decision.action, "value", decision.action))
        if action == "default":
            action = "retry" if try_number <= max_tries else "fail"
        return cls(action=action, reason=decision.reason)

    def log_line(self, try_number: int, max_tries: int) -> str:
        """The one line a failed try's log opens its failure with, e.g.
        ``Try 1 of 3 failed, Airflow decision RETRY: Delta APPEND conflict on table …``."""
        reason = f": {self.reason}" if self.reason else ""
        return f"Try {try_number} of {max_tries + 1} failed, Airflow decision {self.action.upper()}{reason}"


def try_entry(report: dict[str, Any], *, try_number: int, decision: TryDecision | None) -> dict[str, Any]:
    """One try: its commit report (attempts, conflicts, winners, wasted time), its number and decision."""
    entry = {k: v for k, v in report.items() if k not in _SPAN_KEYS}
    entry.update(
        try_number=try_number,
        decision=decision.action if decision else None,
        reason=decision.reason if decision else None,
        ended_at=time.time(),
    )
    return entry


class TryHistory:
    """Where the entries of one task instance's tries are kept; see the module docstring."""

    source = "this_try_only"

    def load(self) -> list[dict[str, Any]]:
        return []

    def save(self, entries: list[dict[str, Any]]) -> None:
        return None

    def forget(self) -> None:
        """Drop the entries once the task instance has ended (only the Variable needs it)."""
        return None


class _StateStoreHistory(TryHistory):
    source = "task_state_store"

    def __init__(self, store: Any) -> None:
        self.store = store

    def load(self) -> list[dict[str, Any]]:
        entries = self.store.get(TRIES_KEY, [])
        return list(entries) if isinstance(entries, list) else []

    def save(self, entries: list[dict[str, Any]]) -> None:
        self.store.set(TRIES_KEY, entries)


class _VariableHistory(TryHistory):
    source = "variable"

    def __init__(self, key: str) -> None:
        self.key = key

    def load(self) -> list[dict[str, Any]]:
        from airflow.sdk import Variable

        text = Variable.get(self.key, default=None)
        entries = json.loads(text) if text else []
        return list(entries) if isinstance(entries, list) else []

    def save(self, entries: list[dict[str, Any]]) -> None:
        from airflow.sdk import Variable

        Variable.set(
            self.key,
            json.dumps(entries, separators=(",", ":")),
            description="airflow-provider-deltacc: the tries of a task instance (deleted when it ends)",
        )

    def forget(self) -> None:
        from airflow.sdk import Variable

        Variable.delete(self.key)


def variable_key(context: Context) -> str:
    """The fallback Variable of the running task instance."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    return f"{TRIES_KEY}.{ti.dag_id}.{ti.run_id}.{ti.task_id}.{-1 if map_index is None else map_index}"


def _histories(context: Context) -> list[TryHistory]:
    histories: list[TryHistory] = []
    store = context.get("task_state_store")
    if store is not None:
        histories.append(_StateStoreHistory(store))
    histories.append(_VariableHistory(variable_key(context)))
    return histories


def add_try_to_history(
    context: Context,
    report: dict[str, Any],
    *,
    decision: TryDecision | None,
    logger: Any = None,
) -> dict[str, Any]:
    """Add this try to the task instance's history and return the report that lists every try.

    The report is this try's (so readers of one try's report keep working), plus ``tries`` (every try so
    far, oldest first, this one last) and ``tries_source`` (where the earlier tries were read from).

    :param context: the running task's context.
    :param report: this try's commit report.
    :param decision: what Airflow does after this try (None when it succeeded, or no decision is known).
    :param logger: where to warn when no history could be kept.
    """
    out = logger or log
    try_number = int(getattr(context["ti"], "try_number", None) or 1)
    entry = try_entry(report, try_number=try_number, decision=decision)
    ended = decision is None or decision.action == "fail"
    for history in _histories(context):
        try:
            earlier = [e for e in history.load() if e.get("try_number") != try_number]
            entries = [*earlier, entry]
            if ended and history.source == "variable":
                history.forget()
            else:
                history.save(entries)
        except Exception as exc:
            out.warning(
                "cannot keep this try's report in the %s (%s: %s)", history.source, type(exc).__name__, exc
            )
            continue
        return {**report, "tries": entries, "tries_source": history.source}
    out.warning("the commit report lists this try only: earlier tries' reports could not be read")
    return {**report, "tries": [entry], "tries_source": TryHistory.source}


def report_tries(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The tries a pushed report lists; a report from before tries were kept is its own only try."""
    tries = report.get("tries")
    if isinstance(tries, list) and tries:
        return [t for t in tries if isinstance(t, dict)]
    return [report]
