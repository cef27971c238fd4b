"""Render the conflict matrix for one profile and table as Markdown (docs, the conflict advisor)."""

from __future__ import annotations

from airflow_provider_deltacc.conflict_matrix.ops import EXCEPTION_NAMES, OpKind
from airflow_provider_deltacc.conflict_matrix.profiles import PROFILE_SPECS, EngineProfile, TableTraits
from airflow_provider_deltacc.conflict_matrix.rules import Verdict, can_conflict
from airflow_provider_deltacc.conflict_matrix.table import Hazard, Level

#: The mark a hazard adds to a cell.
HAZARD_MARK = "⚠"


def _cell(verdict: Verdict) -> str:
    text = f"**{verdict.level.value}**" if verdict.level is Level.WILL else verdict.level.value
    return f"{text} {HAZARD_MARK}" if verdict.hazard is not Hazard.NONE else text


def matrix_markdown(
    profile: EngineProfile | str = EngineProfile.OSS_SERIALIZABLE, traits: TableTraits | None = None
) -> str:
    """Return the full matrix for ``profile`` and ``traits``: a grid of levels, then one line per pair.

    :param profile: the engine profile.
    :param traits: the table traits; defaults to :class:`TableTraits` ().
    """
    traits = traits if traits is not None else TableTraits()
    profile = EngineProfile(profile)
    ops = list(OpKind)
    effective = can_conflict(ops[0], ops[0], profile=profile, traits=traits).profile
    title = f"### Conflict matrix: {PROFILE_SPECS[profile].label} ({traits.describe()})"
    lines = [title, ""]
    if effective is not profile:
        lines += [
            f"Row-level concurrency needs an unpartitioned table with deletion vectors; this table gets the "
            f"matrix of {PROFILE_SPECS[effective].label}.",
            "",
        ]
    lines += [
        "| | " + " | ".join(f"`{op.name}`" for op in ops) + " |",
        "|---|" + "---|" * len(ops),
    ]
    for row in ops:
        cells = [_cell(can_conflict(row, col, profile=profile, traits=traits)) for col in ops]
        lines.append(f"| `{row.name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"never: neither can fail; can: one can fail when they touch the same files, partitions or rows; "
        f"**will**: one fails whenever the other commits first; {HAZARD_MARK}: not a conflict, but unsafe "
        f"to overlap (VACUUM can delete a writer's uncommitted files).",
        "",
    ]
    for i, first in enumerate(ops):
        for second in ops[i:]:
            verdict = can_conflict(first, second, profile=profile, traits=traits)
            facts = [f"**{verdict.level.value}**"]
            if verdict.exceptions:
                facts.append(", ".join(EXCEPTION_NAMES[k] for k in verdict.exceptions))
            if verdict.losers:
                facts.append("can fail: " + ", ".join(f"`{op.name}`" for op in verdict.losers))
            if verdict.hazard is not Hazard.NONE:
                facts.append(f"hazard: {verdict.hazard.value}")
            lines.append(
                f"- `{first.name}` x `{second.name}` ({'; '.join(facts)}): {verdict.reason} "
                f"_Source: {verdict.source}._"
            )
    return "\n".join(lines) + "\n"
