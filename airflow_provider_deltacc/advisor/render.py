"""The advisor's findings as a readable text table (wrapped columns) or JSON."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence

from airflow_provider_deltacc.advisor.analysis import Analysis
from airflow_provider_deltacc.advisor.findings import Finding, FindingLevel

COLUMNS = ("verdict", "table", "task A", "task B", "exceptions", "reason", "fix")
#: Column widths; every cell wraps.
WIDTHS = (13, 24, 24, 24, 31, 60, 44)


def _short_table(table: str, width: int) -> str:
    return table if len(table) <= width else "…" + table[-(width - 1) :]


def _cells(finding: Finding, strip: str) -> list[str]:
    observed = finding.observed.get("summary")
    reason = finding.reason + (f" Observed: {observed}." if observed else "")
    task_a = finding.task_a.removeprefix(strip)
    task_b = "(itself)" if finding.task_b == finding.task_a else finding.task_b.removeprefix(strip)
    return [
        finding.level.text,
        _short_table(finding.table, WIDTHS[1]),
        task_a,
        task_b,
        ", ".join(finding.exceptions) or "-",
        reason + f" [{finding.timing}]",
        "; ".join(finding.fixes[:2]) or "-",
    ]


def render_table(
    findings: Sequence[Finding], *, widths: Sequence[int] = WIDTHS, dag_id: str | None = None
) -> str:
    """The findings as a table with wrapped cells, one block of lines per pair.

    :param findings: the pairs to print.
    :param widths: column widths.
    :param dag_id: when every task is of this one DAG, tasks are printed without the ``dag_id.`` prefix.
    """
    strip = f"{dag_id}." if dag_id else ""
    rule = "-+-".join("-" * w for w in widths)
    lines = [" | ".join(name.ljust(w) for name, w in zip(COLUMNS, widths, strict=True)), rule]
    for finding in findings:
        wrapped = [
            textwrap.wrap(cell, w, break_long_words=True) or [""]
            for cell, w in zip(_cells(finding, strip), widths, strict=True)
        ]
        for row in range(max(len(cell) for cell in wrapped)):
            lines.append(
                " | ".join(
                    (cell[row] if row < len(cell) else "").ljust(w)
                    for cell, w in zip(wrapped, widths, strict=True)
                ).rstrip()
            )
        lines.append(rule)
    return "\n".join(lines)


def summary_line(analysis: Analysis) -> str:
    """``3 DAGs, 12 provider tasks, 9 pairs: 2 will conflict, 4 can conflict, 1 hazard, 2 cannot``."""
    counts = ", ".join(f"{analysis.count(level)} {level.text}" for level in FindingLevel)
    return (
        f"{len(analysis.dag_ids)} DAG{'s' if len(analysis.dag_ids) != 1 else ''}, {len(analysis.tasks)} "
        f"provider tasks, {len(analysis.findings)} pairs that can run at the same time: {counts}"
    )


def render_json(analysis: Analysis, extra: dict[str, object] | None = None) -> str:
    """The analysis as indented JSON."""
    return json.dumps({**analysis.to_dict(), **(extra or {})}, indent=2, sort_keys=True, default=str)
