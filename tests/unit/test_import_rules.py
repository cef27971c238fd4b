"""The layers' import rules (issue 24), read from the source with ``ast``:

* the lease windows and the Airflow face (``windows/``, ``operators/``, ``hooks/``, ``sensors/``,
  ``triggers/``, ``task_groups/``) never import the Spark engine (``engine/``): what they need of a job or a
  table lives in the contract, and what runs Spark they reach through the job (``spark_job``);
* the contract (``contract/``) imports neither Airflow nor Spark (pyspark, py4j, delta), nor the engine.

Every import counts: at module level, inside functions, under ``TYPE_CHECKING``, ``import x`` and
``from x import y``, relative ones, and ``importlib.import_module("...")``/``__import__("...")`` of a
constant name. A subprocess check beside them imports each contract module and looks at what got loaded.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import airflow_provider_deltacc

pytestmark = pytest.mark.unit

PACKAGE = airflow_provider_deltacc.__name__
ROOT = Path(airflow_provider_deltacc.__file__).resolve().parent
ENGINE = f"{PACKAGE}.engine"
FACE = ("windows", "operators", "hooks", "sensors", "triggers", "task_groups")
CONTRACT = "contract"
#: What the contract must not import: Airflow, Spark's Python side, and the engine that runs Spark.
CONTRACT_BANNED = ("airflow", "pyspark", "py4j", "delta", ENGINE)
_IMPORT_FUNCTIONS = frozenset({"import_module", "__import__"})


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path, root: Path) -> str:
    module = _module_name(path, root)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(path: Path, root: Path, level: int, module: str | None) -> str:
    """The absolute name of ``from <dots><module> import ...`` in ``path``."""
    if level == 0:
        return module or ""
    base = _package_of(path, root).split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imported_modules(path: Path, root: Path = ROOT) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(line, modules) for every import in the file: ``import X`` gives ``X``, ``from X import y, z`` gives
    ``X``, ``X.y`` and ``X.z`` (``y`` may be a module).

    :param path: a Python source file of the package.
    :param root: the package's folder (for relative imports).
    """
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, (alias.name,)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(path, root, node.level, node.module)
            names = tuple(f"{module}.{alias.name}" for alias in node.names if alias.name != "*")
            yield node.lineno, (module, *names)
        elif isinstance(node, ast.Call) and node.args:
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            first = node.args[0]
            if name in _IMPORT_FUNCTIONS and isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, (first.value,)


def _is_under(module: str, banned: str) -> bool:
    return module == banned or module.startswith(f"{banned}.")


def violations(folders: tuple[str, ...], banned: tuple[str, ...], root: Path = ROOT) -> list[str]:
    """``file:line imports module`` for every import of a banned module (or a submodule) in the folders.

    :param folders: package folders under ``root``.
    :param banned: module names, each banning itself and its submodules.
    :param root: the package's folder.
    """
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            for line, modules in imported_modules(path, root):
                hits = [module for module in modules if any(_is_under(module, name) for name in banned)]
                if hits:
                    found.append(f"{path.relative_to(root.parent).as_posix()}:{line} imports {hits[0]}")
    return sorted(found)


def _contract_modules() -> list[str]:
    return sorted(
        _module_name(path) for path in (ROOT / CONTRACT).rglob("*.py") if "__pycache__" not in path.parts
    )


def test_the_face_and_the_windows_never_import_the_engine() -> None:
    found = violations(FACE, (ENGINE,))
    assert not found, (
        "the Airflow face imports engine/ (use contract/, spark_jars/ or spark_job/):\n" + "\n".join(found)
    )


def test_the_contract_imports_neither_airflow_nor_spark_nor_the_engine() -> None:
    assert len(_contract_modules()) > 1
    found = violations((CONTRACT,), CONTRACT_BANNED)
    assert not found, "the contract imports Airflow, Spark or the engine:\n" + "\n".join(found)


def test_importing_the_contract_loads_neither_airflow_nor_spark_nor_the_engine() -> None:
    modules = _contract_modules()
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    leaked = sorted(m for m in loaded if any(_is_under(m, name) for name in CONTRACT_BANNED))
    assert not leaked, f"importing the contract loaded {leaked[:8]}"


def test_the_rule_sees_every_kind_of_import(tmp_path: Path) -> None:
    """A fake package with one import of each kind: the rule names each file and line."""
    fake = tmp_path / PACKAGE
    (fake / "hooks" / "sub").mkdir(parents=True)
    (fake / "engine").mkdir()
    for init in ("__init__.py", "hooks/__init__.py", "hooks/sub/__init__.py", "engine/__init__.py"):
        (fake / init).write_text("")
    sources = {
        "hooks/plain.py": f"import {ENGINE}.session\n",
        "hooks/from_module.py": f"from {ENGINE}.table import table_frame\n",
        "hooks/from_package.py": f"from {PACKAGE} import engine\n",
        "hooks/lazy.py": f"def f():\n    from {ENGINE} import txn\n    return txn\n",
        "hooks/typing_only.py": (
            f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from {ENGINE}.txn import TXN_CONFS\n"
        ),
        "hooks/relative.py": "from ..engine import commits\n",
        "hooks/sub/relative_deeper.py": "from ...engine.txn import txn_session_confs\n",
        "hooks/by_name.py": f"import importlib\nimportlib.import_module('{ENGINE}.session')\n",
        "hooks/clean.py": f"from {PACKAGE}.contract import exceptions\nimport os\n",
    }
    for name, text in sources.items():
        (fake / name).write_text(text)
    found = violations(("hooks",), (ENGINE,), root=fake)
    files = {line.split(":")[0].removeprefix(f"{PACKAGE}/") for line in found}
    assert files == set(sources) - {"hooks/clean.py"}, found
    assert f"{PACKAGE}/hooks/lazy.py:2 imports {ENGINE}" in found
    assert f"{PACKAGE}/hooks/relative.py:1 imports {ENGINE}" in found
    assert f"{PACKAGE}/hooks/sub/relative_deeper.py:1 imports {ENGINE}.txn" in found
    assert not violations(("hooks",), ("pyspark",), root=fake)


def test_the_fetch_command_runs() -> None:
    """``python -m airflow_provider_deltacc.spark_jars.delta_jars`` (scripts/setup.sh, the Docker image, the
    docs) reaches the jar cache's command line."""
    result = subprocess.run(
        [sys.executable, "-m", f"{PACKAGE}.spark_jars.delta_jars", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--fetch" in result.stdout
