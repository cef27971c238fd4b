"""What a Python source file imports, read with ``ast`` (nothing is executed)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def imported_roots(path: Path) -> Iterator[tuple[int, set[str]]]:
    """(line, top-level packages) of each absolute import statement in ``path``; relative imports skipped."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield node.lineno, {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, {node.module.split(".")[0]}
