"""Every module has a room named for its concept: the package root holds only the package itself, its public
exceptions and Airflow's provider entry point, plus the old paths of the modules that moved, which re-export
the moved names for one release with a DeprecationWarning and are imported by nothing of ours."""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

import airflow_provider_deltacc

pytestmark = pytest.mark.unit

PACKAGE = Path(airflow_provider_deltacc.__file__).parent
REPO = PACKAGE.parent
ROOT_MODULES = {"__init__", "exceptions", "get_provider_info"}
MOVED = {
    "log_fast_path": "delta_log.fast_path",
    "outcome_recovery": "delta_log.outcome_recovery",
    "retry_policy": "retries.policy",
    "tries": "retries.tries",
    "assets": "lineage.assets",
    "metrics": "observability.metrics",
    "links": "observability.links",
    "config": "deployment.config",
    "environment": "deployment.environment",
    "placement": "deployment.placement",
    "connect_server": "deployment.connect_server",
    "deprecations": "api_support.deprecations",
    "durations": "api_support.durations",
    "lazy_exports": "api_support.lazy_exports",
    "maintenance_run": "operators.maintenance_run",
}
#: Old modules whose name is now their room's: the room's package gives their names (lazily, no warning).
BECAME_ROOMS = {"delta_log": "delta_log.reads", "lineage": "lineage.openlineage"}


def test_the_root_holds_only_the_package_its_exceptions_the_entry_point_and_old_paths() -> None:
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    assert modules - ROOT_MODULES == set(MOVED)


def _public(module_name: str) -> list[str]:
    body = ast.parse((PACKAGE / (module_name.replace(".", "/") + ".py")).read_text()).body
    names = [n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    names += [t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    names += [n.target.id for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
    return [name for name in names if not name.startswith("_")]


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_warns_and_gives_the_very_objects_of_the_new_one(old: str, new: str) -> None:
    # The new module first: a first import of Airflow inside ``pytest.warns`` would route warnings to logging.
    new_module = importlib.import_module(f"airflow_provider_deltacc.{new}")
    sys.modules.pop(f"airflow_provider_deltacc.{old}", None)
    with pytest.warns(DeprecationWarning, match=rf"airflow_provider_deltacc\.{old} is deprecated.*{new}"):
        old_module = importlib.import_module(f"airflow_provider_deltacc.{old}")
    names = _public(new)
    assert names and all(getattr(old_module, name) is getattr(new_module, name) for name in names)


@pytest.mark.parametrize(("room", "module"), sorted(BECAME_ROOMS.items()))
def test_a_room_named_like_an_old_module_still_gives_its_names(room: str, module: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        package = importlib.import_module(f"airflow_provider_deltacc.{room}")
        moved = importlib.import_module(f"airflow_provider_deltacc.{module}")
        names = _public(module)
        assert names and all(getattr(package, name) is getattr(moved, name) for name in names)


def _old_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        for target in targets:
            parts = target.split(".")
            if parts[0] == "airflow_provider_deltacc" and len(parts) > 1 and parts[1] in MOVED:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {target}")
    return found


def test_nothing_of_ours_imports_an_old_path() -> None:
    shims = {PACKAGE / f"{old}.py" for old in MOVED}
    others = ("tests", "dags", "demo", "bench", "scripts")
    trees = [PACKAGE, *(REPO / d for d in others if (REPO / d).is_dir())]
    found = [
        line
        for tree in trees
        for path in sorted(tree.rglob("*.py"))
        if path not in shims and path.resolve() != Path(__file__).resolve()
        for line in _old_imports(path)
    ]
    assert found == []
