"""No function or method in the package is longer than 100 lines, from its ``def`` to its last line (the
docstring included): a longer one does several things, and each should be a function with its own name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import airflow_provider_deltacc

pytestmark = pytest.mark.unit

PACKAGE = Path(airflow_provider_deltacc.__file__).parent
MAX_LINES = 100


def long_functions(root: Path, limit: int) -> list[str]:
    """Every function and method under ``root`` (nested ones included) longer than ``limit`` lines, as
    ``path:line name (n lines)``, longest first.

    :param root: the package directory.
    :param limit: the most lines a function may have.
    """
    found: list[tuple[int, str]] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    where = f"{path.relative_to(root.parent)}:{node.lineno}"
                    found.append((lines, f"{where} {node.name} ({lines} lines)"))
    return [text for _, text in sorted(found, key=lambda item: -item[0])]


def test_no_function_is_longer_than_100_lines() -> None:
    offenders = long_functions(PACKAGE, MAX_LINES)
    assert offenders == [], f"functions over {MAX_LINES} lines; split them into named pieces: {offenders}"


def test_the_scan_finds_a_long_function_and_a_long_method(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    body = [f"    x{i} = {i}" for i in range(100)]
    source = [
        "def long():",  # line 1
        *body,
        "",
        "def short():",
        "    pass",
        "",
        "class C:",
        "    async def method(self):",  # line 107
        *(f"    {line}" for line in body),
    ]
    (package / "m.py").write_text("\n".join(source) + "\n", encoding="utf-8")

    assert long_functions(package, MAX_LINES) == [
        "pkg/m.py:1 long (101 lines)",
        "pkg/m.py:107 method (101 lines)",
    ]
