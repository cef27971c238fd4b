"""The py-files bundle ships only the package's own Airflow-free code (issue #7, security).

* The core zip holds exactly the ``.py`` sources of the driver's static import closure (``spark_job.main``
  and its ``__main__``, through every import including those inside functions), byte for byte, all from
  ``contract``, ``occ``, ``engine``, ``spark_jars`` and ``spark_job``: no tests, caches, bytecode, DAGs,
  config or credential files, none of the worker's code, and not the library API (``conflict_safe``), which
  a job never imports: applications get an archive of their own, the core's modules and the library's.
* Every module a shipped module imports is shipped (checked with the import-rule test's own walker).
* The core stays under its size budget (issue #40's target: under 82 modules and 417,576 bytes), so it
  cannot silently grow back; the budget is a ratchet, lowered as the closure shrinks.
* Junk placed next to the core (tests, conftest, hidden files, a folder that is not a package, a symlink to
  a file elsewhere, a JSON of credentials, bytecode) stays out.
* Every bundled module imports in an interpreter without site-packages, with only the zips on the path,
  and without Airflow (pyspark, py4j and delta are the driver's; they may be missing here).
* The dependency zip is exactly tenacity's sources.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from airflow_provider_deltacc.hooks import bundle
from airflow_provider_deltacc.hooks.bundle import (
    CORE_PACKAGES,
    DRIVER_ENTRY_POINTS,
    LIBRARY_ENTRY_POINTS,
    build_bundle,
    core_files,
    driver_closure,
    package_root,
)
from tests.unit.test_import_rules import imported_modules

pytestmark = pytest.mark.unit

#: The core bundle's budget (issue #40). It held 83 modules / 480,718 bytes when it was whole packages,
#: 79 / 433,628 once it became the driver's closure with the worker's code moved out, 74 / 417,345 once
#: starting a local session (the in-process mode's) left the driver's code, 73 / 405,376 once the library
#: API, which a job never imports, got an archive of its own, and 73 / 409,629 once the job plans its first
#: attempt from the snapshot the worker read (issue 42: code the driver runs, under #40's 417,576), 73 /
#: 410,312 once MERGE, UPDATE and DELETE analyse their expressions against that snapshot's schema; lower
#: these as it shrinks, never raise them to make room for code the driver does not run.
MAX_CORE_MODULES = 74
MAX_CORE_BYTES = 410_500


def _expected_core(root: Path) -> dict[str, bytes]:
    return {
        f"airflow_provider_deltacc/{path.relative_to(root).as_posix()}": path.read_bytes()
        for path in driver_closure(root).values()
    }


def _contents(archive_path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive_path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_core_zip_holds_exactly_the_core_sources(tmp_path: Path) -> None:
    core, deps = build_bundle(tmp_path)
    contents = _contents(core)
    assert contents == _expected_core(package_root())
    tops = {name.split("/")[1] for name in contents}
    assert tops == {"__init__.py", *CORE_PACKAGES} - {"conflict_safe"}
    assert all(name.endswith(".py") for name in contents)
    # none of the Airflow face travels to the driver
    for airflow_part in (
        "operators",
        "hooks",
        "sensors",
        "triggers",
        "task_groups",
        "leases",
        "gate",
        "turns",
        "advisor",
        "delta_log",
        "object_storage",
        "deployment",
    ):
        assert not any(name.startswith(f"airflow_provider_deltacc/{airflow_part}/") for name in contents)

    dist = metadata.distribution("tenacity")
    expected_deps = {
        entry.as_posix()
        for entry in dist.files or []
        if entry.parts[0] == "tenacity" and entry.suffix in {".py", ".typed"}
    }
    assert set(_contents(deps)) == expected_deps and expected_deps


def test_junk_next_to_the_core_stays_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "pkg" / "airflow_provider_deltacc"
    shutil.copytree(package_root(), fake, ignore=shutil.ignore_patterns("__pycache__"))
    outside = tmp_path / "outside_secret.py"
    outside.write_text("PASSWORD = 'hunter2'\n")
    junk = {
        "engine/tests/__init__.py": "",
        "engine/tests/test_engine.py": "def test(): pass\n",
        "engine/conftest.py": "",
        "engine/test_quick.py": "",
        "engine/scratch/notes.py": "TOKEN = 'abc'\n",  # a folder without __init__.py
        "engine/.editor_backup.py": "",
        "occ/__pycache__/kinds.cpython-311.pyc": "",
        "spark_job/credentials.json": json.dumps({"secret": "s"}),
        "spark_job/local.cfg": "[aws]\nsecret=x\n",
    }
    for name, text in junk.items():
        path = fake / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (fake / "engine" / "linked.py").symlink_to(outside)
    monkeypatch.setattr(bundle, "package_root", lambda: fake)

    core, _ = build_bundle(tmp_path / "out")
    names = set(_contents(core))
    for name in [*junk, "engine/linked.py"]:
        assert f"airflow_provider_deltacc/{name}" not in names, name
    real = _expected_core(package_root())
    assert names == set(real), names ^ set(real)


def test_every_bundled_module_imports_without_airflow(tmp_path: Path) -> None:
    library, deps = build_bundle(tmp_path, library=True)
    modules = sorted(
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in _contents(library)
        if not name.endswith("__main__.py")
    )
    assert "airflow_provider_deltacc.conflict_safe" in modules
    script = f"""
import importlib, json, sys
sys.path[:0] = [{str(library)!r}, {str(deps)!r}]
driver_side = {{"pyspark", "py4j", "delta"}}
failed = {{}}
for module in {modules!r}:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in driver_side:
            failed[module] = repr(exc)
    except Exception as exc:
        failed[module] = repr(exc)
ours = [m for name, m in sys.modules.items() if name.startswith("airflow_provider_deltacc")]
print(json.dumps({{
    "failed": failed,
    "airflow": sorted(name for name in sys.modules if name.split(".")[0] == "airflow"),
    "files": sorted({{getattr(m, "__file__", None) or "" for m in ours}}),
}}))
"""
    # -S: no site-packages, so nothing of this environment (Airflow, pyspark, the installed package) is found
    result = subprocess.run(
        [sys.executable, "-S", "-c", script], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["failed"] == {}
    assert outcome["airflow"] == []
    files = outcome["files"]
    assert files and all(file.startswith(str(library)) for file in files), files
    assert len(modules) > 20


def test_the_library_api_travels_in_an_archive_of_its_own_and_never_with_a_job(tmp_path: Path) -> None:
    """A spark-submit job gets the core and tenacity; an application or notebook gets the library API's
    archive instead of the core: the core's modules, byte for byte, and the library API's closure."""
    core, deps = build_bundle(tmp_path)
    library, library_deps = build_bundle(tmp_path, library=True)
    assert library_deps == deps
    in_core, in_library = _contents(core), _contents(library)
    assert not any(name.startswith("airflow_provider_deltacc/conflict_safe/") for name in in_core)
    assert set(in_library) - set(in_core) == {"airflow_provider_deltacc/conflict_safe/__init__.py"}
    assert all(in_library[name] == data for name, data in in_core.items())
    assert set(driver_closure(package_root(), LIBRARY_ENTRY_POINTS)) <= {_module_of(n) for n in in_library}


def _module_of(arcname: str) -> str:
    return arcname.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_every_module_a_shipped_module_imports_is_shipped() -> None:
    root = package_root()
    shipped = {_module_of(arcname): path for path, arcname in core_files()}
    assert set(DRIVER_ENTRY_POINTS) <= set(shipped)
    missing = []
    for module, path in shipped.items():
        for line, names in imported_modules(path, root):
            for name in names:
                if not name.startswith("airflow_provider_deltacc."):
                    continue
                relative = name.split(".")[1:]
                is_module = (root.joinpath(*relative) / "__init__.py").is_file() or (
                    root.joinpath(*relative[:-1]) / f"{relative[-1]}.py"
                ).is_file()
                if is_module and name not in shipped:
                    missing.append(f"{module}:{line} imports {name}")
    assert not missing, "the driver imports modules the bundle leaves behind:\n" + "\n".join(missing)


def test_the_closure_follows_imports_inside_functions(tmp_path: Path) -> None:
    root = tmp_path / "airflow_provider_deltacc"
    sources = {
        "__init__.py": "",
        "spark_job/__init__.py": "",
        "spark_job/__main__.py": "from airflow_provider_deltacc.spark_job.main import main\n",
        "spark_job/main.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from airflow_provider_deltacc.engine import typed\n"
            "def main():\n    from . import helper\n"
            "    from airflow_provider_deltacc.contract.deep import thing\n"
        ),
        "spark_job/helper.py": "def f():\n    import importlib\n"
        "    importlib.import_module('airflow_provider_deltacc.occ.lazy')\n",
        "spark_job/worker_only.py": "",
        "conflict_safe/__init__.py": "",
        "contract/__init__.py": "",
        "contract/deep.py": "thing = 1\n",
        "contract/unused.py": "",
        "engine/__init__.py": "",
        "engine/typed.py": "",
        "occ/__init__.py": "",
        "occ/lazy.py": "",
    }
    for name, text in sources.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    closure = driver_closure(root)
    assert set(closure) == {
        "airflow_provider_deltacc",
        "airflow_provider_deltacc.spark_job",
        "airflow_provider_deltacc.spark_job.__main__",
        "airflow_provider_deltacc.spark_job.main",
        "airflow_provider_deltacc.spark_job.helper",
        "airflow_provider_deltacc.contract",
        "airflow_provider_deltacc.contract.deep",
        "airflow_provider_deltacc.engine",
        "airflow_provider_deltacc.engine.typed",
        "airflow_provider_deltacc.occ",
        "airflow_provider_deltacc.occ.lazy",
    }
    assert closure["airflow_provider_deltacc.spark_job.helper"] == root / "spark_job" / "helper.py"
    assert set(driver_closure(root, LIBRARY_ENTRY_POINTS)) == {
        "airflow_provider_deltacc",
        "airflow_provider_deltacc.conflict_safe",
    }


def test_a_closure_leaving_the_driver_rooms_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "pkg" / "airflow_provider_deltacc"
    shutil.copytree(package_root(), fake, ignore=shutil.ignore_patterns("__pycache__"))
    run = fake / "engine" / "run.py"
    run.write_text(
        run.read_text() + "\n\ndef _late():\n    from airflow_provider_deltacc.hooks import submit\n"
    )
    monkeypatch.setattr(bundle, "package_root", lambda: fake)
    with pytest.raises(ValueError, match="outside"):
        core_files()


def _core_size() -> tuple[int, int, str]:
    files = core_files()
    sizes = sorted(((path.stat().st_size, arcname) for path, arcname in files), reverse=True)
    biggest = ", ".join(
        f"{arcname.removeprefix('airflow_provider_deltacc/')} ({size:,} B)" for size, arcname in sizes[:8]
    )
    return len(files), sum(size for size, _ in sizes), biggest


def test_the_core_stays_under_its_budget() -> None:
    modules, total, biggest = _core_size()
    message = (
        f"the Spark driver's bundle holds {modules} modules / {total:,} bytes (budget: under "
        f"{MAX_CORE_MODULES} / {MAX_CORE_BYTES:,}); the biggest: {biggest}. Keep what only the Airflow "
        "worker runs out of the driver's imports (see hooks/bundle.py)."
    )
    assert modules < MAX_CORE_MODULES, message
    assert total < MAX_CORE_BYTES, message


def test_what_the_driver_loads_by_name_is_shipped() -> None:
    """occ loads its modules on first use by a computed name, which no import statement names: each must be
    in the bundle anyway (its ``TYPE_CHECKING`` imports put them in the closure)."""
    from airflow_provider_deltacc import occ

    shipped = {_module_of(arcname) for _, arcname in core_files()}
    lazy = {f"airflow_provider_deltacc.occ.{module}" for module in occ._LAZY.values()}
    assert lazy and lazy <= shipped, lazy - shipped
