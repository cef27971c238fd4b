"""Every Python snippet in the README and docs/ compiles, uses no name it does not define or import (ruff's
undefined-name check on each snippet alone), and runs (it builds its operators and DAGs; nothing is
submitted), so a reader can paste one and run it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
_SNIPPET_RE = re.compile(r"```python\n(.*?)```", re.S)


def _snippets() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, match in enumerate(_SNIPPET_RE.finditer(page.read_text()), start=1):
            found.append((f"{page.relative_to(ROOT)}#{number}", match.group(1)))
    return found


SNIPPETS = _snippets()


def test_the_docs_have_python_snippets() -> None:
    pages = {name.split("#")[0] for name, _ in SNIPPETS}
    assert {"README.md", "docs/howto-maintenance.md", "docs/howto-staging-append-then-merge.md"} <= pages


@pytest.mark.parametrize(("name", "code"), SNIPPETS, ids=[name for name, _ in SNIPPETS])
def test_a_snippet_compiles_and_defines_every_name_it_uses(name: str, code: str) -> None:
    compile(code, name, "exec")
    ruff = Path(sys.executable).with_name("ruff")
    checks = ["--isolated", "--select", "F821,F822,F823", "--output-format", "concise"]
    result = subprocess.run(
        [str(ruff), "check", *checks, "--stdin-filename", "snippet.py", "-"],
        input=code,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"{name}:\n{result.stdout}"


@pytest.mark.parametrize(("name", "code"), SNIPPETS, ids=[name for name, _ in SNIPPETS])
def test_a_snippet_runs(name: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the advisor snippet reads dags/
    exec(compile(code, name, "exec"), {"__name__": "doc_snippet"})
