"""Observed against predicted: which predicted pairs really conflicted in past runs.

Input is the commit reports the operators push to XCom (``deltacc_report``), read from the Airflow
database or from a JSON file; a report lists every try of its task instance, and every try's conflicts
count. A report names its task by ``dag_id``/``task_id`` keys when exported with
them, else by its txn app id ``airflow/<dag_id>/<task_id>/<map_index>[/<run_id>]``. Every conflict in a
report's attempts has a kind and the winning version; the winner is the report that committed that
version of the table, or else (``read_history``) the operation the table's Delta history shows there
(the provider's log reader, no JVM). Each conflict is matched to the finding of its loser and winner; what
matches no finding is returned as unpredicted, so a gap in the prediction is visible.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from airflow_provider_deltacc.advisor.analysis import Analysis
from airflow_provider_deltacc.advisor.findings import Finding, FindingLevel
from airflow_provider_deltacc.contract.exceptions import AdvisorInputError
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.retries.tries import REPORT_XCOM_KEY, report_tries

log = logging.getLogger(__name__)

_SCHEMA = frozenset({OpKind.SCHEMA_CHANGE})
#: The operations a Delta commit's ``operation`` name can stand for (an INSERT/SQL commit shows as WRITE).
_OPERATIONS: dict[str, frozenset[OpKind]] = {
    "WRITE": frozenset({OpKind.BLIND_APPEND, OpKind.INSERT_SELECT, OpKind.OVERWRITE, OpKind.SCHEMA_CHANGE}),
    "CREATE OR REPLACE TABLE AS SELECT": _SCHEMA,
    "MERGE": frozenset({OpKind.MERGE}),
    "UPDATE": frozenset({OpKind.UPDATE}),
    "DELETE": frozenset({OpKind.DELETE}),
    "OPTIMIZE": frozenset({OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER}),
    "CLUSTER BY": frozenset({OpKind.CLUSTER_BY}),
}
#: Conflicts only a metadata (or protocol) change can cause.
_METADATA_KINDS = frozenset({"METADATA_CHANGED", "PROTOCOL_CHANGED"})


def load_reports(path: str | Path) -> list[dict[str, Any]]:
    """Commit reports from a JSON file: a list, ``{"reports": [...]}``, or one JSON object per line.

    :param path: the file.
    :raises AdvisorInputError: naming the file when it cannot be read or holds no reports.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise AdvisorInputError(f"--reports {path}: cannot read it ({exc.strerror})") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise AdvisorInputError(f"--reports {path}: not JSON or JSON lines ({exc})") from None
    if isinstance(data, Mapping):
        data = data.get("reports", [data])
    if not isinstance(data, list) or not all(isinstance(r, Mapping) for r in data):
        raise AdvisorInputError(f"--reports {path}: expected a list of commit report objects")
    return [dict(r) for r in data]


def xcom_reports(dag_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The ``deltacc_report`` XComs of past runs of ``dag_ids`` in the Airflow database, with their task.

    :param dag_ids: the DAGs.
    :raises AdvisorInputError: when the metadata database cannot be read.
    """
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    found: list[dict[str, Any]] = []
    try:
        with create_session() as session:
            rows = session.query(XComModel).filter(
                XComModel.key == REPORT_XCOM_KEY, XComModel.dag_id.in_(list(dag_ids))
            )
            for row in rows:
                value = XComModel.deserialize_value(row)
                if isinstance(value, Mapping):
                    ids = {"dag_id": row.dag_id, "task_id": row.task_id, "run_id": row.run_id}
                    found.append({**value, **ids, "map_index": row.map_index})
    except Exception as exc:
        raise AdvisorInputError(
            f"--xcom: cannot read the Airflow metadata database ({type(exc).__name__}: {exc}); run it "
            "where Airflow is configured (AIRFLOW_HOME, AIRFLOW__DATABASE__SQL_ALCHEMY_CONN), or export the "
            "reports to a file for --reports"
        ) from None
    return found


def report_task(report: Mapping[str, Any]) -> str | None:
    """``dag_id.task_id`` of the task that wrote ``report``, or None if it does not say."""
    if report.get("dag_id") and report.get("task_id"):
        return f"{report['dag_id']}.{report['task_id']}"
    parts = str(report.get("txn_app_id") or "").split("/")
    if len(parts) >= 4 and parts[0] == "airflow":
        return f"{parts[1]}.{parts[2]}"
    return None


def _table(name: Any) -> str:
    return table_key(Table(str(name))) if name else ""


def _history(table: str) -> dict[int, str]:
    try:
        from airflow_provider_deltacc.delta_log.log_reader import commit_infos

        return {int(h["version"]): str(h.get("operation", "")) for h in commit_infos(Table(table))}
    except Exception as exc:
        log.debug("cannot read the history of %s: %s", table, exc)
        return {}


def _winner_kinds(operation: str, kind: str) -> frozenset[OpKind]:
    """What the winning commit can have been: by its Delta operation name, else by the conflict's kind."""
    if kind in _METADATA_KINDS:
        return _SCHEMA  # ADD COLUMNS, SET TBLPROPERTIES, CHANGE COLUMN, ... all commit a Metadata action
    return _OPERATIONS.get(operation.upper(), frozenset())


def _pick(
    findings: Sequence[Finding], loser: str, winner: str | None, operation: str, kind: str
) -> Finding | None:
    mine = [f for f in findings if loser in f.tasks]
    if winner is not None:
        exact = [f for f in mine if f.tasks == frozenset({loser, winner})]
        return exact[0] if exact else None
    kinds = _winner_kinds(operation, kind)
    by_op = [f for f in mine if (f.kind_b if f.task_a == loser else f.kind_a) in kinds]
    return by_op[0] if len(by_op) == 1 else None


def attach_observed(
    analysis: Analysis, reports: Sequence[Mapping[str, Any]], *, read_history: bool = False
) -> tuple[Analysis, list[str]]:
    """Count the observed conflicts per predicted pair.

    :param analysis: the prediction.
    :param reports: commit reports of past runs.
    :param read_history: read each table's Delta history (no JVM) to name winners no report names.
    :returns: the analysis with ``Finding.observed`` filled in, and one line per conflict no finding
        explains.
    """
    committed: dict[tuple[str, int], str] = {}
    for report in reports:
        task = report_task(report)
        version = report.get("table_version")
        if task and isinstance(version, int) and report.get("status") in ("committed", "skipped_duplicate"):
            committed[(_table(report.get("table")), version)] = task
    histories: dict[str, dict[int, str]] = {}
    by_table: dict[str, list[Finding]] = {}
    for finding in analysis.findings:
        by_table.setdefault(_table(finding.table), []).append(finding)
    seen: dict[int, Counter[str]] = {}
    reported: Counter[str] = Counter(t for t in (report_task(r) for r in reports) if t)
    unmatched: list[str] = []
    for report in reports:
        loser, table = report_task(report), _table(report.get("table"))
        for attempt in (a for one_try in report_tries(dict(report)) for a in one_try.get("attempts") or []):
            conflict = attempt.get("conflict") if isinstance(attempt, Mapping) else None
            if not conflict:
                continue
            kind = str(conflict.get("kind", "")).upper()
            version = conflict.get("winning_version")
            winner = committed.get((table, version)) if isinstance(version, int) else None
            operation = str(conflict.get("winning_operation") or "")
            if winner is None and not operation and read_history and isinstance(version, int):
                operation = histories.setdefault(table, _history(table)).get(version, "")
            picked = _pick(by_table.get(table, []), loser, winner, operation, kind) if loser else None
            if picked is None:
                at = f" (v{version})" if isinstance(version, int) else ""
                who = winner or (f"a {operation}{at}" if operation else f"an unknown commit{at}")
                unmatched.append(f"{kind} in {loser or 'an unnamed task'} on {table}, lost to {who}")
                continue
            seen.setdefault(id(picked), Counter())[kind] += 1
    updated = []
    for finding in analysis.findings:
        kinds = seen.get(id(finding), Counter())
        total = sum(kinds.values())
        runs = sum(reported[t] for t in finding.tasks)
        detail = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items()))
        if total:
            plural = "s" if total > 1 else ""
            summary = f"predicted {finding.level.value}, observed {total} conflict{plural} ({detail})"
        elif runs:
            summary = (
                f"predicted {finding.level.value}, observed none in {runs} report{'s' if runs > 1 else ''}"
            )
        else:
            updated.append(finding)
            continue
        observed = {
            "conflicts": total,
            "kinds": dict(kinds),
            "reports": runs,
            "summary": summary,
            "surprise": bool(total) and finding.level is FindingLevel.CANNOT,
        }
        updated.append(replace(finding, observed=observed))
    return replace(analysis, findings=tuple(updated)), unmatched
