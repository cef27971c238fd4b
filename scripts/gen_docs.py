"""Regenerate the docs rendered from data: whole pages (the retry decisions, the conflict matrix) and
generated blocks inside hand-written pages (the settings table of the deployment guide, between
``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``).

``python scripts/gen_docs.py`` writes them; ``--check`` fails when a committed page is stale (the test
suite runs that check, so the docs can never drift from the code).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


#: Where the matrix changed when it was checked against real two-writer runs, and why (issue 19, part 4).
MATRIX_CHANGES = [
    "## Where the matrix changed, and why\n",
    "The matrix was held against real two-writer runs on delta-spark 4.4",
    "(`tests/integration/conflict_matrix/test_matrix_on_delta.py`: the loser held after reading its",
    "snapshot, the winner committing meanwhile, on the same partition, another partition and an",
    "unpartitioned table). It now models Delta's `ConflictChecker` as it is, and changed in two places:\n",
    "- **Pinning is per side.** Delta compares only the *loser's* read predicates and read files with the",
    "  files the winner added and removed, so the winner's own pinning is irrelevant: a MERGE, UPDATE,",
    "  DELETE, replaceWhere or INSERT … SELECT pinned to its partitions survives a blind append, an UPDATE",
    "  or DELETE without partition predicate, or an unpinned MERGE that wrote elsewhere. Before, a pair",
    "  counted as pinned only when *both* carried partition literals, so these were `can` (both could",
    "  fail); now a pinned side never loses a file-level conflict (`can_conflict(..., pinned_a=,",
    "  pinned_b=)`; the table above): a pinned reader against a blind append or an OPTIMIZE elsewhere is",
    "  `never`, against an unpinned reader `can` with only the unpinned one failing.",
    "  `TableTraits(pinned=True)` still means both sides.",
    "- **Allow-listed metadata changes are their own operation, `ENABLE_FEATURE`.** OSS Delta 4.1+",
    "  resolves a concurrent `ALTER TABLE … SET TBLPROPERTIES` that only enables a feature through a",
    "  property on its allow-list (`delta.enableDeletionVectors`, `delta.enableRowTracking`,",
    "  `delta.columnMapping.mode = name`, `delta.checkpointPolicy = v2`, `delta.enableInCommitTimestamps`)",
    "  for a writer that changes no metadata itself: every `ENABLE_FEATURE` x writer cell is `never` on OSS",
    "  (it was `will` as a `SCHEMA_CHANGE`). ADD COLUMNS and any other property change (`SCHEMA_CHANGE`)",
    "  still fail every concurrent writer, and two metadata changes still fail each other. The Databricks",
    "  profiles keep their documented 'metadata changes fail all concurrent writes'. Write windows and the",
    "  advisor recognise such a statement as `ENABLE_FEATURE`.",
    "",
]


#: What the page says where the matrix's cells (``airflow_provider_deltacc/conflict_matrix/table.py``) cite
#: notes that are not in this repository: the Delta source they stand for, or this provider's docs. Longest
#: first; a citation missing here fails the generation (and ``--check``), naming it.
CITATIONS = [
    (
        "reference §7.1 (OPTIMIZE commitAndRetry), §3.3",
        "Delta OptimizeTableCommand (commitAndRetry) and ConflictChecker's metadata check",
    ),
    ("§3.2 step 1", "Delta ConflictChecker.checkProtocolCompatibility"),
    (
        "reference §3.2-3.3",
        "Delta ConflictChecker's metadata check "
        "(checkNoMetadataUpdates; 4.1+: attemptToResolveMetadataConflicts)",
    ),
    ("reference §3.2 step 6", "Delta ConflictChecker.checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn"),
    ("reference §3.2", "Delta ConflictChecker.checkConflicts"),
    ("reference §3.4", "Delta OptimisticTransaction.isBlindAppend (a blind append reads no files)"),
    (
        "reference §7.1",
        "Delta OptimizeTableCommand (dataChange=false rewrites, committed at SnapshotIsolation)",
    ),
    ("reference §7.2", "Delta VacuumCommand (checkRetentionPeriodSafety)"),
    ("ARCHITECTURE 'Maintenance'", "this provider's maintenance gate (docs/concepts.md)"),
]

#: What the cells' numbered sources are, and where the matrix is checked.
MATRIX_SOURCES = [
    "**Sources.** Each cell's _Source_ cites, by number, the public pages whose conflict tables the matrix",
    "reproduces: 000 [Delta Lake: Concurrency control](https://docs.delta.io/concurrency-control)",
    "(OSS Delta), 001 [Databricks: Row-level concurrency]"
    "(https://learn.microsoft.com/azure/databricks/optimizations/isolation/row-level-concurrency),",
    "002 [Microsoft Fabric: concurrent writes to Delta tables]"
    "(https://learn.microsoft.com/fabric/data-engineering/delta-lake-concurrency-control),",
    "003 [Databricks: Concurrency control and isolation levels]"
    "(https://docs.databricks.com/delta/isolation-level.html) (an older page) and",
    "004 [Azure Databricks: Isolation levels and write conflicts]"
    "(https://learn.microsoft.com/azure/databricks/optimizations/isolation-level).",
    "The pages are not in this repository: `tests/support/matrix_seeds.py` transcribes every cell of their",
    "tables under the same numbers, and `tests/unit/conflict_matrix/test_matrix.py` holds the matrix to it.",
    "`ConflictChecker`, `OptimisticTransaction`, `OptimizeTableCommand` and `VacuumCommand` are",
    "delta-spark's ([delta-io/delta](https://github.com/delta-io/delta),",
    "`spark/src/main/scala/org/apache/spark/sql/delta/`). The matrix is",
    "`airflow_provider_deltacc/conflict_matrix/`, measured against real two-writer runs on delta-spark in",
    "`tests/integration/conflict_matrix/`.\n",
]


def cited(text: str) -> str:
    """``text`` with the cells' citations of notes outside the repository replaced (``CITATIONS``).

    :raises ValueError: a citation ``CITATIONS`` does not know.
    """
    for old, new in CITATIONS:
        text = text.replace(old, new)
    unknown = sorted(set(re.findall(r"(?:reference )?§[0-9.\-]+(?: step \d+)?|ARCHITECTURE '[^']*'", text)))
    if unknown:
        raise ValueError(f"the conflict matrix cites {unknown}; say what they stand for in CITATIONS")
    return text


def pages() -> dict[Path, str]:
    from airflow_provider_deltacc.conflict_matrix import EngineProfile, TableTraits, matrix_markdown
    from airflow_provider_deltacc.occ import decision_table_markdown

    matrix = [
        "# The conflict matrix\n",
        "Generated from `airflow_provider_deltacc.conflict_matrix` by `scripts/gen_docs.py`; do not edit.\n",
        "Which pairs of concurrent operations can make one of them fail, per engine profile. The gate",
        "that schedules OPTIMIZE and VACUUM, and the conflict advisor, read the same data.\n",
        *MATRIX_SOURCES,
    ]
    for profile in dict.fromkeys(EngineProfile):
        matrix.append(matrix_markdown(profile, TableTraits()))
        matrix.append("")
    matrix.append("## With partition pinning (partitioned table, disjoint literal partition predicates)\n")
    matrix.append(matrix_markdown(EngineProfile.OSS_SERIALIZABLE, TableTraits(partitioned=True, pinned=True)))
    matrix.append("")
    matrix.append("## Liquid-clustered table (measured on delta-spark, see clustering.md)\n")
    matrix.append(matrix_markdown(EngineProfile.OSS_SERIALIZABLE, TableTraits(clustered=True)))
    matrix.append("")
    matrix.append("## With one side pinned (the row's operation pinned away from what the column's writes)\n")
    matrix.append(
        matrix_markdown(EngineProfile.OSS_SERIALIZABLE, TableTraits(partitioned=True), row_pinned=True)
    )
    matrix.append("")
    matrix += MATRIX_CHANGES
    decisions = [
        "# Retry decisions\n",
        "Generated from `airflow_provider_deltacc.occ.decisions` by `scripts/gen_docs.py`; do not edit.\n",
        "What the commit loop does with each conflict kind, by the class of the operation that lost.\n",
        decision_table_markdown(),
        "These are the retries inside the job. What ends the try is decided by the Airflow retry policy",
        "([exceptions](operators.md)): a conflict that outlasted them is retried with a jittered delay,",
        "infrastructure that could not be reached (a Spark master or Connect server, a driver the cluster",
        "killed, the lease store of a maintenance task) with the task's own `retry_delay`, and bad input",
        "and fatal conflicts fail at once.",
    ]
    return {
        ROOT / "docs" / "conflict-matrix.md": cited("\n".join(matrix).rstrip() + "\n"),
        ROOT / "docs" / "retry-decisions.md": "\n".join(decisions).rstrip() + "\n",
    }


def blocks() -> dict[tuple[Path, str], str]:
    """The generated blocks of hand-written pages, by page and block name."""
    from airflow_provider_deltacc.deployment.environment import settings_table_markdown

    return {(ROOT / "docs" / "deployment.md", "settings"): settings_table_markdown()}


def with_block(page: str, name: str, body: str) -> str:
    """``page`` with the block ``name`` replaced by ``body``.

    :raises ValueError: when the page has no such block.
    """
    pattern = re.compile(
        rf"(<!-- generated: {re.escape(name)} -->\n).*?(<!-- end generated: {re.escape(name)} -->)", re.S
    )
    if not pattern.search(page):
        raise ValueError(f"no generated block {name!r}")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), page)


def rendered() -> dict[Path, str]:
    """Every generated page and every page with generated blocks, as it should read."""
    result = pages()
    for (path, name), body in blocks().items():
        result[path] = with_block(result.get(path) or path.read_text(), name, body)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if a page is out of date")
    args = parser.parse_args()
    stale = []
    for path, text in rendered().items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.relative_to(ROOT))
        else:
            path.write_text(text)
    if stale:
        print(f"stale docs: {', '.join(map(str, stale))}; run python scripts/gen_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
