"""The task pairs that conflict most, with the conflict advisor's suggested fix.

The advisor (:mod:`airflow_provider_deltacc.advisor`) predicts the pairs from the DAGs as Airflow serialized
them into the metadata DB (the api-server imports no DAG file) and
:func:`~airflow_provider_deltacc.advisor.observed.attach_observed` counts the observed conflicts on them; a
pair in a DAG the api-server cannot read there (not serialized yet, or not deserializable) is still listed,
from the reports alone, with the conflict's own advice.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_deltacc.advisor.observed import report_task
from airflow_provider_deltacc.contract.conflict import Conflict
from airflow_provider_deltacc.occ.advice import advice_for
from airflow_provider_deltacc.retries.tries import report_tries
from airflow_provider_deltacc.ui.data import report_table

log = logging.getLogger(__name__)

#: Seconds an analysis is reused while the DAGs it read are unchanged (deserializing and analysing them on
#: every page load would be slow; the schedules it compares move with time).
_ANALYSIS_TTL_S = 300.0
#: (dag_id, dag_hash) of the DAGs analysed -> (when, (analysis, the DAGs it covers)).
_analyses: dict[tuple[tuple[str, str], ...], tuple[float, tuple[Any, frozenset[str]]]] = {}


@dataclass(frozen=True)
class ConflictPair:
    """Two tasks that conflicted on a table: how often, of which kinds, and what to change."""

    table: str
    loser: str
    winner: str
    conflicts: int
    kinds: str
    fix: str
    source: str


def _serialized_dags(rows: Sequence[Any]) -> list[Any]:
    """The DAGs of the serialized DAG rows; one that does not deserialize here (a timetable or a class of a
    plugin the api-server lacks) is left out, so its pairs come from the reports."""
    dags = []
    for row in rows:
        try:
            dags.append(row.dag)
        except Exception as exc:
            log.warning("the conflict advisor cannot read the serialized DAG %s: %s", row.dag_id, exc)
    return dags


def _analysis(dag_ids: tuple[str, ...]) -> tuple[Any, frozenset[str]]:
    """The advisor's analysis of the latest serialized DAGs ``dag_ids`` (None: none is serialized), and which
    DAGs it covers."""
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.utils.session import create_session

    from airflow_provider_deltacc.advisor.analysis import analyse

    if not dag_ids:
        return None, frozenset()
    with create_session() as session:
        rows = SerializedDagModel.get_latest_serialized_dags(dag_ids=list(dag_ids), session=session)
        key = tuple(sorted((str(row.dag_id), str(row.dag_hash)) for row in rows))
        now = time.monotonic()
        cached = _analyses.get(key)
        if cached is not None and now - cached[0] < _ANALYSIS_TTL_S:
            return cached[1]
        dags = _serialized_dags(rows)
    found = (analyse(dags) if dags else None, frozenset(str(d.dag_id) for d in dags))
    for stale, (when, _) in list(_analyses.items()):  # the api-server serves requests in threads
        if now - when >= _ANALYSIS_TTL_S:
            _analyses.pop(stale, None)
    _analyses[key] = (now, found)
    return found


def _from_advisor(reports: Sequence[Mapping[str, Any]]) -> tuple[list[ConflictPair], frozenset[str]]:
    """The advisor's pairs with observed conflicts, and the DAGs it analysed."""
    from airflow_provider_deltacc.advisor.observed import attach_observed

    dag_ids = tuple(sorted({str(r.get("dag_id")) for r in reports if r.get("dag_id")}))
    analysis, analysed = _analysis(dag_ids)
    if analysis is None:
        return [], frozenset()
    observed, _ = attach_observed(analysis, reports)
    pairs = []
    for finding in observed.findings:
        seen = finding.observed or {}
        if not seen.get("conflicts"):
            continue
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(seen.get("kinds", {}).items()))
        fix = finding.fixes[0] if finding.fixes else seen.get("summary", "")
        pairs.append(
            ConflictPair(
                finding.table, finding.task_a, finding.task_b, int(seen["conflicts"]), kinds, fix, "advisor"
            )
        )
    return pairs, analysed


def _from_reports(
    reports: Sequence[Mapping[str, Any]], *, losers_not_in: frozenset[str] = frozenset()
) -> list[ConflictPair]:
    """Loser and winner from the reports alone: the winner is the task whose report committed the version
    the conflict names; the fix is the conflict's advice. Losers of the DAGs ``losers_not_in`` are left
    out (the advisor's pairs count them)."""
    committed: dict[tuple[str, int], str] = {}
    for report in reports:
        task, version = report_task(report), report.get("table_version")
        if task and isinstance(version, int):
            committed[(report_table(report), version)] = task
    counts: Counter[tuple[str, str, str]] = Counter()
    kinds: dict[tuple[str, str, str], Counter[str]] = {}
    advice: dict[tuple[str, str, str, str], str] = {}
    for report in reports:
        if report.get("dag_id") in losers_not_in:
            continue
        loser, table = report_task(report) or "an unnamed task", report_table(report)
        for one_try in report_tries(dict(report)):
            for attempt in one_try.get("attempts") or []:
                conflict = attempt.get("conflict") if isinstance(attempt, Mapping) else None
                if not isinstance(conflict, Mapping):
                    continue
                version = conflict.get("winning_version")
                winner = committed.get((table, version)) if isinstance(version, int) else None
                winner = winner or str(conflict.get("winning_operation") or "an unknown commit")
                key, kind = (table, loser, winner), str(conflict.get("kind", "")).upper()
                counts[key] += 1
                kinds.setdefault(key, Counter())[kind] += 1
                if (*key, kind) not in advice:
                    try:
                        pinned = one_try.get("pinned_columns") or ()
                        found = advice_for(Conflict.from_dict(dict(conflict)), pinned_columns=pinned)
                    except (KeyError, ValueError):
                        found = ""
                    advice[(*key, kind)] = found
    return [
        ConflictPair(
            key[0],
            key[1],
            key[2],
            n,
            ", ".join(f"{k} x{c}" for k, c in sorted(kinds[key].items())),
            advice[(*key, _most_common(kinds[key]))],
            "reports",
        )
        for key, n in counts.items()
    ]


def _most_common(kinds: Counter[str]) -> str:
    """The kind a pair lost to most often (by name on a tie): whose advice the pair shows."""
    return min(kinds, key=lambda k: (-kinds[k], k))


def conflict_pairs(reports: Sequence[Mapping[str, Any]], *, limit: int = 10) -> list[ConflictPair]:
    """The ``limit`` pairs with the most conflicts, most first.

    :param reports: commit reports with ``dag_id``/``task_id`` (see ``TaskReport.with_ids``).
    :param limit: how many pairs.
    """
    pairs: list[ConflictPair] = []
    analysed: frozenset[str] = frozenset()
    try:
        pairs, analysed = _from_advisor(reports)
    except Exception as exc:
        log.warning("the conflict advisor could not analyse the serialized DAGs: %s", exc)
    # The DAGs the advisor could not analyse (not serialized, not deserializable) still have their pairs.
    pairs += _from_reports(reports, losers_not_in=analysed if pairs else frozenset())
    return sorted(pairs, key=lambda p: (-p.conflicts, p.table, p.loser, p.winner))[:limit]
