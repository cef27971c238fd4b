"""Partition scopes: which partitions a lease, a window or a maintenance run touches, and overlap.

A scope is ``None`` for the whole table, or a list of partition specs such as
``[{"date": "2026-11-20"}, {"date": "2026-11-21", "region": "eu"}]``. A spec names some partition
columns; it covers every partition whose values match on those columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

PartitionSpec = dict[str, str]
#: ``None`` means the whole table.
PartitionScope = list[PartitionSpec] | None


def normalize_scope(
    partitions: Iterable[Mapping[str, object]] | None, *, field: str = "partitions"
) -> PartitionScope:
    """Validate a scope and return it as a list of ``{column: value}`` dicts of strings.

    :param partitions: ``None`` (whole table) or partition specs.
    :param field: the parameter name quoted in error messages.
    :raises ValueError: for a spec that is not a non-empty mapping of column names to values, or an
        empty list (which would mean "no partitions": pass None for the whole table instead).
    """
    if partitions is None:
        return None
    if isinstance(partitions, Mapping | str):
        raise ValueError(
            f"{field}={partitions!r} must be a list of partition specs, e.g. [{{'date': '2026-11-20'}}]; "
            "wrap a single spec in a list"
        )
    scope: list[PartitionSpec] = []
    for spec in partitions:
        if not isinstance(spec, Mapping) or not spec:
            raise ValueError(
                f"{field} has the entry {spec!r}; each entry must be a non-empty mapping of partition "
                "column to value, e.g. {'date': '2026-11-20'}"
            )
        clean: PartitionSpec = {}
        for column, value in spec.items():
            if not isinstance(column, str) or not column or value is None:
                raise ValueError(
                    f"{field} has the entry {dict(spec)!r}; partition columns must be non-empty strings "
                    "and values must not be None"
                )
            clean[column] = str(value)
        if clean not in scope:
            scope.append(clean)
    if not scope:
        raise ValueError(f"{field}=[] names no partition; pass None to mean the whole table")
    return scope


def specs_overlap(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Whether two partition specs can match a common partition (they agree on every shared column).

    :param a: a partition spec.
    :param b: another partition spec.
    """
    return all(a[column] == b[column] for column in a.keys() & b.keys())


def scopes_overlap(a: Sequence[Mapping[str, str]] | None, b: Sequence[Mapping[str, str]] | None) -> bool:
    """Whether two scopes can touch a common partition; the whole table (None) overlaps everything.

    :param a: a scope.
    :param b: another scope.
    """
    if a is None or b is None:
        return True
    return any(specs_overlap(x, y) for x in a for y in b)


def format_spec(spec: Mapping[str, str]) -> str:
    """``date=2026-11-20/region=eu``, the way Delta prints a partition.

    :param spec: a partition spec.
    """
    return "/".join(f"{column}={value}" for column, value in spec.items())


def format_scope(scope: Sequence[Mapping[str, str]] | None) -> str:
    """``date=2026-11-20, date=2026-11-21``, or ``the whole table`` for None.

    :param scope: a scope.
    """
    if scope is None:
        return "the whole table"
    return ", ".join(format_spec(spec) for spec in scope)
