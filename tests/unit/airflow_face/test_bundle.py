"""The py-files bundle ships only the package's own Airflow-free code (issue #7, security).

* The core zip holds exactly the ``.py`` sources of ``contract``, ``occ``, ``engine``, ``spark_jars``,
  ``spark_job`` and ``conflict_safe`` (plus the package ``__init__``), byte for byte: no tests, caches,
  bytecode, DAGs, config or credential files.
* Junk placed next to the core (tests, conftest, hidden files, a folder that is not a package, a symlink to
  a file elsewhere, a JSON of credentials, bytecode) stays out.
* Every bundled module imports in an interpreter without site-packages, with only the two zips on the
  path, and without Airflow (pyspark, py4j and delta are the driver's; they may be missing here).
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
from airflow_provider_deltacc.hooks.bundle import CORE_PACKAGES, build_bundle, package_root

pytestmark = pytest.mark.unit


def _expected_core(root: Path) -> dict[str, bytes]:
    expected = {"airflow_provider_deltacc/__init__.py": (root / "__init__.py").read_bytes()}
    for sub in CORE_PACKAGES:
        for path in (root / sub).rglob("*.py"):
            if "__pycache__" not in path.parts:
                expected[f"airflow_provider_deltacc/{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return expected


def _contents(archive_path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive_path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_core_zip_holds_exactly_the_core_sources(tmp_path: Path) -> None:
    core, deps = build_bundle(tmp_path)
    contents = _contents(core)
    assert contents == _expected_core(package_root())
    tops = {name.split("/")[1] for name in contents}
    assert tops == {"__init__.py", "contract", "occ", "engine", "spark_jars", "spark_job", "conflict_safe"}
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
    core, deps = build_bundle(tmp_path)
    modules = sorted(
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in _contents(core)
        if not name.endswith("__main__.py")
    )
    script = f"""
import importlib, json, sys
sys.path[:0] = [{str(core)!r}, {str(deps)!r}]
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
    assert outcome["files"] and all(file.startswith(str(core)) for file in outcome["files"]), outcome["files"]
    assert len(modules) > 20
