"""The argument tables of docs/operators.md name real arguments, with the code's defaults.

Each table whose header is ``| argument | default | meaning |`` is held against the signature of what its
heading names (an operator, sensor or task-group factory): every argument in a row's first cell must be a
parameter of that class's ``__init__`` (any ``__init__`` along its MRO) or of the factory, and a default the
doc states as a literal (None, True, False, a number, ``120 s``, a backticked or quoted string) must equal
the code's. Prose defaults ("by mode", "update all", ``—``) are not compared. In the table of
``DeltaBaseOperator`` a row marked *writers* is checked against every writer, and must be refused by OPTIMIZE
and VACUUM; any other row against every operator. Nothing here imports pyspark: the operators load lazily.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operators.md"
HEADER = ("argument", "default", "meaning")
#: A default the doc gives in prose (or not at all): not compared.
PROSE = object()


@dataclass(frozen=True)
class Row:
    """One argument row: its names, its default cell and its meaning cell, and the line it is on."""

    line: int
    names: tuple[str, ...]
    default: str
    meaning: str


@dataclass(frozen=True)
class Table:
    """An argument table and the heading above it."""

    heading: str
    rows: tuple[Row, ...]

    @property
    def owner(self) -> str:
        """The first backticked name of the heading: the class or factory the table documents."""
        match = re.search(r"`([A-Za-z_]\w*)`", self.heading)
        assert match, f"{DOC.name}: the heading {self.heading!r} names no class or factory in backticks"
        return match.group(1)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _tables(text: str) -> list[Table]:
    """Every argument table of the page, with the nearest heading above it."""
    tables: list[Table] = []
    heading = ""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and tuple(_cells(line)) == HEADER:
            rows = []
            index += 2  # past the header and the |---| line
            while index < len(lines) and lines[index].startswith("|"):
                # A cell may hold an escaped pipe (`"delta"\|"table"`); it is never in the first two cells.
                name_cell, default, meaning = _cells(lines[index].replace("\\|", "/"))[:3]
                rows.append(Row(index + 1, tuple(re.findall(r"`([^`]+)`", name_cell)), default, meaning))
                index += 1
            tables.append(Table(heading, tuple(rows)))
            continue
        index += 1
    return tables


def _split_top_level(cell: str) -> list[str]:
    """``cell`` split at the commas outside parentheses and backticks: one default per argument."""
    parts, depth, quoted, current = [], 0, False, ""
    for char in cell:
        if char == "`":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif char == "," and not quoted and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    parts.append(current.strip())
    return parts


def _literal(text: str) -> Any:
    """The Python value a default cell states, or ``PROSE``."""
    if text in ("None", "True", "False"):
        return ast.literal_eval(text)
    if seconds := re.fullmatch(r"(\d+(?:\.\d+)?)(?: s)?", text):
        return ast.literal_eval(seconds.group(1))
    if re.fullmatch(r"""(["']).*\1""", text):
        return ast.literal_eval(text)
    if quoted := re.fullmatch(r"`([^`]*)`", text):
        inner = quoted.group(1)
        if re.fullmatch(r"""(["']).*\1""", inner):
            return ast.literal_eval(inner)
        if re.fullmatch(r"[A-Za-z_][\w.]*", inner):
            return inner
    return PROSE


def _same(documented: Any, real: Any) -> bool:
    if isinstance(real, timedelta):
        real = real.total_seconds()
    if documented is None or real is None or isinstance(documented, bool) or isinstance(real, bool):
        return documented is real
    return bool(documented == real)


def _parameters(owner: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The named parameters of a factory, or of every ``__init__`` along a class's MRO (nearest first)."""
    if inspect.isclass(owner):
        inits = [vars(cls)["__init__"] for cls in owner.__mro__ if "__init__" in vars(cls)]
    else:
        inits = [owner]
    found: dict[str, inspect.Parameter] = {}
    for init in inits:
        for parameter in inspect.signature(init).parameters.values():
            if parameter.name != "self" and parameter.kind not in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                found.setdefault(parameter.name, parameter)
    return found


def _owner(name: str) -> Callable[..., Any]:
    """The class or factory a table's heading names, found where the docs say it is imported from."""
    import airflow_provider_deltacc.operators as operators
    import airflow_provider_deltacc.sensors as sensors
    import airflow_provider_deltacc.task_groups as task_groups
    from airflow_provider_deltacc.operators.base import DeltaBaseOperator

    for module in (operators, sensors, task_groups):
        if name in module.__all__:
            found: Callable[..., Any] = getattr(module, name)
            return found
    assert name == DeltaBaseOperator.__name__, f"{DOC.name}: no operator, sensor or task group {name!r}"
    return DeltaBaseOperator


def _check(owners: list[Callable[..., Any]], table: Table, row: Row) -> list[str]:
    """What is wrong with one row, checked against each of ``owners`` (one line per problem)."""
    where = f"{DOC.relative_to(ROOT)}:{row.line} (table under {table.heading!r})"
    defaults = _split_top_level(row.default)
    if len(defaults) not in (1, len(row.names)):
        return [f"{where}: {len(row.names)} arguments {row.names} but {len(defaults)} defaults {defaults}"]
    if len(defaults) == 1:
        defaults *= len(row.names)
    problems: dict[str, list[str]] = {}  # problem -> the owners that have it
    for owner in owners:
        parameters = _parameters(owner)
        for name, cell in zip(row.names, defaults, strict=True):
            parameter = parameters.get(name)
            documented = _literal(cell)
            if parameter is None:
                problem = f"`{name}` is not an argument of"
            elif documented is PROSE:
                continue
            elif parameter.default is inspect.Parameter.empty:
                problem = f"`{name}` is documented with default {cell!r}, but it is required by"
            elif not _same(documented, parameter.default):
                problem = (
                    f"`{name}` is documented with default {cell!r} ({documented!r}), but the code's default "
                    f"is {parameter.default!r} in"
                )
            else:
                continue
            problems.setdefault(problem, []).append(owner.__name__)
    return [f"{where}: {problem} {', '.join(names)}" for problem, names in problems.items()]


def _operators() -> tuple[list[type], list[type]]:
    """Every writer operator and every maintenance operator the package exports."""
    import airflow_provider_deltacc.operators as operators
    from airflow_provider_deltacc.operators.maintenance_base import DeltaMaintenanceOperator
    from airflow_provider_deltacc.operators.write_base import DeltaWriteOperator

    exported = [getattr(operators, name) for name in operators.__all__ if name != "SparkSubmitOptions"]
    writers = [cls for cls in exported if issubclass(cls, DeltaWriteOperator)]
    maintenance = [cls for cls in exported if issubclass(cls, DeltaMaintenanceOperator)]
    assert writers and maintenance and len(writers) + len(maintenance) == len(exported)
    return writers, maintenance


TABLES = _tables(DOC.read_text())


def test_the_page_has_the_argument_tables() -> None:
    owners = {table.owner for table in TABLES}
    expected = {
        "DeltaBaseOperator",
        "DeltaAppendOperator",
        "DeltaMergeOperator",
        "staging_append_then_merge",
        "table_maintenance",
    }
    assert expected <= owners, f"{DOC.name}: argument tables found for {sorted(owners)}"
    assert all(row.names for table in TABLES for row in table.rows), "a row names no argument in backticks"


@pytest.mark.parametrize("table", TABLES, ids=[table.owner for table in TABLES])
def test_a_table_names_real_arguments_with_the_code_defaults(table: Table) -> None:
    owner = _owner(table.owner)
    problems: list[str] = []
    if table.owner == "DeltaBaseOperator":
        writers, maintenance = _operators()
        for row in table.rows:
            if "*writers*" in row.meaning:
                problems += _check(list(writers), table, row)
                for cls in maintenance:
                    taken = sorted(set(row.names) & set(_parameters(cls)))
                    if taken:
                        where = f"{DOC.relative_to(ROOT)}:{row.line}"
                        problems.append(f"{where}: {cls.__name__} takes the writer arguments {taken}")
            else:
                problems += _check([*writers, *maintenance], table, row)
    else:
        for row in table.rows:
            problems += _check([owner], table, row)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("cell", "value"),
    [
        ("None", None),
        ("True", True),
        ("120 s", 120),
        ("2", 2),
        ("`keyed`", "keyed"),
        ('`""`', ""),
        ("'x'", "x"),
        ("—", PROSE),
        ("by mode", PROSE),
        ("`DeltaConflictRetryPolicy()`", PROSE),
        ("`[deltacc] default_deferrable` (else `[operators] default_deferrable`, False)", PROSE),
    ],
)
def test_a_default_cell_is_read_as_a_literal_or_as_prose(cell: str, value: Any) -> None:
    read = _literal(cell)
    if value is PROSE or value is None or isinstance(value, bool):
        assert read is value
    else:
        assert read == value and type(read) is type(value)


def test_defaults_split_at_commas_outside_parentheses_and_backticks() -> None:
    cell = "`[deltacc] default_deferrable` (else `[operators] default_deferrable`, False), 30 s, None"
    assert _split_top_level(cell) == [
        "`[deltacc] default_deferrable` (else `[operators] default_deferrable`, False)",
        "30 s",
        "None",
    ]
