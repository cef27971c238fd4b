"""The layers' import rules (issues 24 and 40), read from the source with ``ast``:

* the leases, the gate, the turns and the Airflow face (``leases/``, ``gate/``, ``turns/``, ``operators/``,
  ``hooks/``, ``sensors/``, ``triggers/``, ``task_groups/``) never import the Spark engine (``engine/``): what
  they need of a job or a table lives in the contract, and what runs Spark they reach through the job
  (``spark_job``);
* the contract (``contract/``) imports neither Airflow nor Spark (pyspark, py4j, delta), nor the engine;
* no import runs back up (:data:`RULES`): the contract imports nothing of the package outside ``contract/``
  (so neither ``occ/``, ``leases/``, ``gate/``, ``turns/``, ``engine/`` nor ``spark_job/``); ``engine/``,
  ``leases/``, ``gate/`` and ``turns/`` never import ``spark_job/``; ``delta_log/`` imports neither
  ``spark_job/`` nor ``engine/``; ``leases/``, ``gate/`` and ``turns/`` import no ``hooks/``, ``operators/``
  or ``deployment/``; ``leases/`` imports neither ``gate/`` nor ``turns/``, and ``gate/`` and ``turns/``
  not each other; ``object_storage/`` imports no ``hooks/`` or ``operators/``;
* no two rooms (the package's top-level packages and modules) import each other, directly or through others.

Every import counts: at module level, inside functions, under ``TYPE_CHECKING``, ``import x`` and
``from x import y``, relative ones, and ``importlib.import_module("...")``/``__import__("...")`` of a
constant name. A subprocess check beside them imports each contract module and looks at what got loaded.
"""

from __future__ import annotations

import ast
import itertools
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
FACE = ("leases", "gate", "turns", "operators", "hooks", "sensors", "triggers", "task_groups")
CONTRACT = "contract"
#: What the contract must not import: Airflow, Spark's Python side, and the engine that runs Spark.
CONTRACT_BANNED = ("airflow", "pyspark", "py4j", "delta", ENGINE)
_IMPORT_FUNCTIONS = frozenset({"import_module", "__import__"})
#: The package's rooms: its top-level packages and modules.
ROOMS = tuple(
    sorted(
        path.stem if path.suffix == ".py" else path.name
        for path in ROOT.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    )
)


def _rooms(*names: str) -> tuple[str, ...]:
    return tuple(f"{PACKAGE}.{name}" for name in names)


#: No import runs back up: rule -> (the rooms it binds, the modules they must not import, where to look).
RULES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "the contract imports nothing of ours outside contract/ (no occ, leases, turns, engine, spark_job)": (
        (CONTRACT,),
        _rooms(*(room for room in ROOMS if room != CONTRACT)),
        "move what it needs down into contract/",
    ),
    "engine/, leases/, gate/ and turns/ never import spark_job/": (
        ("engine", "leases", "gate", "turns"),
        _rooms("spark_job"),
        "what the job and they share lives in contract/ (the spec's parser, exit codes, the report file)",
    ),
    "delta_log/ imports neither spark_job/ nor engine/": (
        ("delta_log",),
        _rooms("spark_job", "engine"),
        "what the job and the submitter share lives in contract/",
    ),
    "leases/, gate/ and turns/ import no hooks/, operators/ or deployment/": (
        ("leases", "gate", "turns"),
        _rooms("hooks", "operators", "deployment"),
        "what needs Airflow's settings or connections belongs above them (the lease CLI is in cli/)",
    ),
    "leases/ imports neither gate/ nor turns/": (
        ("leases",),
        _rooms("gate", "turns"),
        "the store and its predicates sit below the gate and the writers' turns, which both use them",
    ),
    "gate/ imports no turns/": (
        ("gate",),
        _rooms("turns"),
        "what maintenance and writers both need of leases lives in leases/",
    ),
    "turns/ imports no gate/": (
        ("turns",),
        _rooms("gate"),
        "what maintenance and writers both need of leases lives in leases/",
    ),
    "object_storage/ imports no hooks/ or operators/": (
        ("object_storage",),
        _rooms("hooks", "operators"),
        "what both need belongs below them (Airflow's secrets masker is in observability/)",
    ),
}


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


def test_the_face_and_the_lease_rooms_never_import_the_engine() -> None:
    found = violations(FACE, (ENGINE,))
    assert not found, (
        "the Airflow face imports engine/ (use contract/, spark_jars/ or spark_job/):\n" + "\n".join(found)
    )


def test_the_contract_imports_neither_airflow_nor_spark_nor_the_engine() -> None:
    assert len(_contract_modules()) > 1
    found = violations((CONTRACT,), CONTRACT_BANNED)
    assert not found, "the contract imports Airflow, Spark or the engine:\n" + "\n".join(found)


@pytest.mark.parametrize("rule", list(RULES))
def test_no_import_runs_back_up(rule: str) -> None:
    folders, banned, fix = RULES[rule]
    found = violations(folders, banned)
    assert not found, f"{rule}; {fix}:\n" + "\n".join(found)


def _room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == PACKAGE and parts[1] in ROOMS else None


def room_graph(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """room -> {room it imports: the first ``file:line`` that does}, every import counted.

    :param root: the package's folder.
    """
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        room = _room_of(_module_name(path, root))
        if room is None:
            continue
        edges = graph.setdefault(room, {})
        for line, modules in imported_modules(path, root):
            for other in {_room_of(module) for module in modules} - {None, room}:
                assert other is not None
                edges.setdefault(other, f"{path.relative_to(root.parent).as_posix()}:{line}")
    return graph


def room_cycle(graph: dict[str, dict[str, str]]) -> list[str]:
    """The rooms of one import cycle (the first room again at the end), or [] when there is none.

    :param graph: see :func:`room_graph`.
    """
    done: set[str] = set()

    def walk(room: str, path: list[str]) -> list[str]:
        if room in path:
            return [*path[path.index(room) :], room]
        if room in done:
            return []
        for other in sorted(graph.get(room, {})):
            cycle = walk(other, [*path, room])
            if cycle:
                return cycle
        done.add(room)
        return []

    for start in sorted(graph):
        cycle = walk(start, [])
        if cycle:
            return cycle
    return []


def test_no_two_rooms_import_each_other() -> None:
    graph = room_graph()
    assert {"contract", "occ", "leases", "gate", "turns", "engine", "spark_job"} <= set(graph)
    cycle = room_cycle(graph)
    assert not cycle, "rooms import each other: " + ", ".join(
        f"{room} -> {other} ({graph[room][other]})" for room, other in itertools.pairwise(cycle)
    )


def test_the_cycle_check_finds_a_cycle() -> None:
    ring = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:1"}, "c": {"a": "c.py:1"}}
    assert room_cycle(ring) == ["a", "b", "c", "a"]
    assert room_cycle({"a": {"b": "a.py:1"}, "b": {}, "c": {"a": "c.py:1", "b": "c.py:2"}}) == []


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
        "hooks/sub/relative_deeper.py": "from ...engine.txn import txn_confs\n",
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
    """``python -m airflow_provider_deltacc.spark_jars.jar_setup`` (scripts/setup.sh, the Docker image, the
    docs) reaches the jar cache's command line."""
    result = subprocess.run(
        [sys.executable, "-m", f"{PACKAGE}.spark_jars.jar_setup", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--fetch" in result.stdout
