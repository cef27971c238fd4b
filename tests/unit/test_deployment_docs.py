"""docs/deployment.md against the code: every environment variable the provider reads is in the generated
settings table (and docker/airflow.env sets none that is not), and the compatibility matrix says what the
lock pins."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from airflow_provider_deltacc.deployment.environment import (
    CONNECT_MODE_ENV,
    ENV_VARS,
    SUBMIT_OPTS_ENV,
    documented_names,
    settings_table_markdown,
)

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "airflow_provider_deltacc"
GUIDE = ROOT / "docs" / "deployment.md"
_NAME = r"([A-Z][A-Z0-9_]{2,})"
#: The ways the code names an environment variable: a ``*_ENV`` constant, or a literal read or set.
_ENV_USES = [
    re.compile(rf'^[A-Z_]*ENV = "{_NAME}"', re.M),
    re.compile(rf'environ(?:\.get|\.setdefault|\.pop)?\(\s*"{_NAME}"'),
    re.compile(rf'environ\["{_NAME}"\]'),
    re.compile(rf'"{_NAME}" (?:not )?in (?:os\.)?environ'),
    re.compile(rf'env\["{_NAME}"\]'),
]


def _names_in_code() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for pattern in _ENV_USES:
            for name in pattern.findall(text):
                found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_environment_variable_the_code_names_is_in_the_table() -> None:
    found = _names_in_code()
    assert {"DELTACC_JAR_CACHE", "DELTACC_LEASE_DB", "SPARK_HOME", "PYSPARK_PYTHON"} <= set(found)
    missing = {name: where for name, where in found.items() if name not in documented_names()}
    assert not missing, f"add these to airflow_provider_deltacc/deployment/environment.py: {missing}"


def test_the_names_spelled_in_the_table_module_are_the_hooks_own() -> None:
    from airflow_provider_deltacc.hooks.spark_log import SUBMIT_OPTS_ENV as submit_opts_env
    from airflow_provider_deltacc.spark_jars.connect_mode import CONNECT_MODE_ENV as connect_env

    assert (connect_env, submit_opts_env) == (CONNECT_MODE_ENV, SUBMIT_OPTS_ENV)


def test_the_guide_shows_the_generated_table() -> None:
    text = GUIDE.read_text()
    assert settings_table_markdown() in text
    for var in ENV_VARS:
        assert f"| `{var.name}` |" in text
    assert "`[deltacc] report_dir` (`AIRFLOW__DELTACC__REPORT_DIR`)" in text


def test_docker_airflow_env_sets_only_documented_provider_variables() -> None:
    names = [
        line.split("=", 1)[0].strip()
        for line in (ROOT / "docker" / "airflow.env").read_text().splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    ]
    provider = [n for n in names if n.startswith(("DELTACC_", "AIRFLOW__DELTACC__"))]
    assert provider, names  # the file does set provider variables
    assert set(provider) <= documented_names(), set(provider) - documented_names()
    assert not [n for n in names if n.startswith("DELTACC_EXAMPLE") or n == "DELTACC_EXECUTION_MODE"]


def _matrix() -> dict[str, str]:
    text = GUIDE.read_text().split("## Compatibility", 1)[1].split("\n## ", 1)[0]
    rows = [
        line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "---" not in line
    ]
    return {component.strip(): tested.strip() for component, tested, _ in rows[1:]}


def _locked() -> tuple[str, dict[str, str]]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return lock["requires-python"], {p["name"]: p.get("version", "") for p in lock["package"]}


def test_the_compatibility_matrix_is_what_the_lock_pins() -> None:
    requires_python, versions = _locked()
    matrix = _matrix()
    packages = {re.search(r"\(`([a-z0-9-]+)`", c): t for c, t in matrix.items()}
    checked = {m.group(1): tested for m, tested in packages.items() if m}
    assert {"apache-airflow", "pyspark", "delta-spark", "deltalake"} <= set(checked)
    for package, tested in checked.items():
        assert versions[package] == tested, (
            f"{package}: the guide says {tested}, uv.lock pins {versions[package]}"
        )
    assert matrix["Python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert requires_python == ">=3.11" and "| Python | 3.11 | >= 3.11 |" in GUIDE.read_text()
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert f"openjdk-{matrix['Java']}-" in setup  # the Java the set-up installs


def test_the_readme_links_the_guide_and_the_troubleshooting_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/deployment.md)" in readme and "(docs/troubleshooting.md)" in readme
