"""Which partitions a task reads or writes, as far as its arguments say before it runs, and overlap.

A :class:`Scope` is one of:

- ``literal``: partitions named by literal ``partition_values`` (UPDATE, DELETE, overwrite, OPTIMIZE).
- ``rows``: the partitions of inline source rows (``{"kind": "rows", ...}``), known once the table's
  partition columns are known.
- ``source``: pinned to the partitions its source holds, which are known only at run time (a MERGE pinned
  by its keys, an append or overwrite of a file or query).
- ``whole``: the whole table (a MERGE without pin, an UPDATE/DELETE/OPTIMIZE without partitions).
- ``unknown``: a templated or XCom-fed argument decides it; the advisor assumes the worst.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from airflow_provider_deltacc.leases.partitions import PartitionSpec, format_scope, scopes_overlap

ScopeKind = Literal["literal", "rows", "source", "whole", "unknown"]
#: ``yes``: they certainly share partitions; ``no``: certainly disjoint; ``maybe``: known only at run time.
Overlap = Literal["yes", "no", "maybe"]


@dataclass(frozen=True)
class Scope:
    """The partitions of one task.

    :param kind: see the module docstring.
    :param specs: ``literal``: the partition specs; ``rows``: the inline rows (column -> Delta's string).
    :param columns: ``source``/``rows``: the partition columns it is pinned on, when known.
    :param note: why the scope is what it is (e.g. which argument is templated).
    """

    kind: ScopeKind
    specs: tuple[PartitionSpec, ...] = ()
    columns: tuple[str, ...] = ()
    note: str = ""

    def describe(self, partition_columns: Sequence[str] = ()) -> str:
        """How reasons name the scope, e.g. ``date=2026-11-01`` or ``the whole table``.

        :param partition_columns: the table's partition columns, when known.
        """
        if self.kind == "literal":
            return format_scope(list(self.specs))
        if self.kind == "rows":
            projected = project_rows(self.specs, partition_columns)
            if projected:
                return format_scope(projected)
            return "the partitions of its inline rows"
        if self.kind == "source":
            return "the partitions its source holds (known at run time)"
        if self.kind == "whole":
            return "the whole table"
        return f"unknown partitions ({self.note})" if self.note else "unknown partitions"


WHOLE = Scope("whole")


def literal_scope(specs: Sequence[Mapping[str, str]]) -> Scope:
    """A scope of literal partition specs."""
    return Scope("literal", tuple(dict(spec) for spec in specs))


def project_rows(rows: Sequence[Mapping[str, str]], columns: Sequence[str]) -> list[PartitionSpec]:
    """The distinct partitions of ``rows`` on ``columns`` (case-insensitive); empty if a row lacks one.

    :param rows: rows as column -> canonical value.
    :param columns: partition columns.
    """
    if not columns:
        return []
    found: list[PartitionSpec] = []
    for row in rows:
        lowered = {key.lower(): value for key, value in row.items()}
        if any(column.lower() not in lowered for column in columns):
            return []
        spec = {column: lowered[column.lower()] for column in columns}
        if spec not in found:
            found.append(spec)
    return found


def _rows_against(rows: Scope, other: Sequence[PartitionSpec]) -> Overlap:
    columns = sorted({column for spec in other for column in spec})
    projected = project_rows(rows.specs, columns)
    if not projected:
        return "maybe"
    return "yes" if scopes_overlap(projected, list(other)) else "no"


def overlap(a: Scope, b: Scope, partition_columns: Sequence[str] = ()) -> Overlap:
    """Whether two scopes on one table share partitions.

    The whole table overlaps everything for certain; an unknown or run-time scope may overlap anything
    else; literal partitions and inline rows are compared.

    :param a: one scope.
    :param b: the other.
    :param partition_columns: the table's partition columns, when known (to compare inline rows).
    """
    if a.kind == "whole" or b.kind == "whole":
        return "yes"
    if "unknown" in (a.kind, b.kind) or "source" in (a.kind, b.kind):
        return "maybe"
    if a.kind == "literal" and b.kind == "literal":
        return "yes" if scopes_overlap(list(a.specs), list(b.specs)) else "no"
    if a.kind == "rows" and b.kind == "rows":
        columns = [c for c in partition_columns if c]
        left, right = project_rows(a.specs, columns), project_rows(b.specs, columns)
        if not left or not right:
            return "maybe"
        return "yes" if scopes_overlap(left, right) else "no"
    rows, literal = (a, b) if a.kind == "rows" else (b, a)
    return _rows_against(rows, literal.specs)
