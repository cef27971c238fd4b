"""Render the conflict matrix for one profile and table as Markdown (docs, the conflict advisor)."""

from __future__ import annotations

from airflow_provider_deltacc.conflict_matrix.ops import EXCEPTION_NAMES
from airflow_provider_deltacc.conflict_matrix.profiles import PROFILE_SPECS, EngineProfile, TableTraits
from airflow_provider_deltacc.conflict_matrix.rules import Verdict, can_conflict
from airflow_provider_deltacc.conflict_matrix.table import Hazard, Level
from airflow_provider_deltacc.contract.op_kinds import OpKind

#: The mark a hazard adds to a cell.
HAZARD_MARK = "⚠"


def _cell(verdict: Verdict) -> str:
    text = f"**{verdict.level.value}**" if verdict.level is Level.WILL else verdict.level.value
    return f"{text} {HAZARD_MARK}" if verdict.hazard is not Hazard.NONE else text


def matrix_markdown(
    profile: EngineProfile | str = EngineProfile.OSS_SERIALIZABLE,
    traits: TableTraits | None = None,
    *,
    row_pinned: bool = False,
) -> str:
    """Return the full matrix for ``profile`` and ``traits``: a grid of levels, then one line per pair.

    :param profile: the engine profile.
    :param traits: the table traits; defaults to :class:`TableTraits` ().
    :param row_pinned: one side pinned: the row's operation reads only partitions the column's does not
        write, the column's is not pinned (needs ``traits.partitioned``). The lines then list the ordered
        pairs whose verdict differs from the unpinned one.
    """
    traits = traits if traits is not None else TableTraits()
    profile = EngineProfile(profile)
    ops = list(OpKind)
    pins = {"pinned_a": True, "pinned_b": False} if row_pinned else {}
    effective = can_conflict(ops[0], ops[0], profile=profile, traits=traits).profile
    described = f"{traits.describe()}, row pinned, column not" if row_pinned else traits.describe()
    title = f"### Conflict matrix: {PROFILE_SPECS[profile].label} ({described})"
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
        cells = [_cell(can_conflict(row, col, profile=profile, traits=traits, **pins)) for col in ops]
        lines.append(f"| `{row.name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"never: neither can fail; can: one can fail when they touch the same files, partitions or rows; "
        f"**will**: one fails whenever the other commits first; {HAZARD_MARK}: not a conflict, but unsafe "
        f"to overlap (VACUUM can delete a writer's uncommitted files).",
        "",
    ]
    if row_pinned:
        ordered = [(row, col) for row in ops for col in ops]
        pairs = [
            (row, col)
            for row, col in ordered
            if can_conflict(row, col, profile=profile, traits=traits, **pins)
            != can_conflict(row, col, profile=profile, traits=traits)
        ]
    else:
        pairs = [(first, second) for i, first in enumerate(ops) for second in ops[i:]]
    for first, second in pairs:
        verdict = can_conflict(first, second, profile=profile, traits=traits, **pins)
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
