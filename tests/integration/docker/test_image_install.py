"""docker/Dockerfile's dependency steps, run in a throwaway venv: the requirement export from uv.lock and
the image's install, as the Dockerfile writes them (paths swapped for the test's).

The packages come from uv's cache, which the set-up's ``uv sync`` of the same lock filled: the image's
``pip install --no-cache-dir --no-deps`` line runs as ``uv pip install --no-deps`` with the same requirements
and sources, so the test checks what the image gets (the exported set, nothing resolved again, the project
built from its sources) without downloading a gigabyte of wheels on every run. ``pip check`` still judges
the result.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = ROOT / "docker" / "Dockerfile"
#: What the Dockerfile's second stage copies from the repository into /opt/deltacc/src.
SOURCES = ("pyproject.toml", "uv.lock", "README.md", "airflow_provider_deltacc")


def _shell_steps(name: str) -> list[str]:
    """Every ``&&``-separated step of the Dockerfile's RUN instructions that starts with ``name``."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    steps = []
    for line in text.splitlines():
        if line.startswith("RUN "):
            steps += [step.strip() for step in line[4:].split("&&")]
    return [re.sub(r"\s+", " ", step) for step in steps if step.startswith(name)]


def _uv() -> str:
    """The uv the set-up used (scripts/setup.sh): on PATH, or the one it bootstrapped into .cache/."""
    found = shutil.which("uv") or str(ROOT / ".cache" / "uv-bootstrap" / "bin" / "uv")
    assert Path(found).exists(), f"no uv on PATH nor at {found}: run scripts/setup.sh"
    return found


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{shlex.join(command)}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_export_and_install_give_the_locked_set_without_pyspark_client(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, src / name)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    pip, python, uv = str(venv / "bin" / "pip"), str(venv / "bin" / "python"), _uv()

    (export,) = _shell_steps("/venv/bin/uv export")
    requirements = tmp_path / "requirements.txt"
    export = export.replace("/venv/bin/uv", uv).replace("/build/requirements.txt", str(requirements))
    _run(shlex.split(export), src)
    assert not re.search(r"^-e |^\.$|^file:", requirements.read_text(), flags=re.MULTILINE)

    image_installs = [step for step in _shell_steps("pip install") if "/opt/deltacc/requirements.txt" in step]
    assert len(image_installs) == 1, image_installs
    install = image_installs[0].replace("/opt/deltacc/requirements.txt", str(requirements))
    install = install.replace("/opt/deltacc/src", str(src))
    args = shlex.split(install)
    assert args[:2] == ["pip", "install"] and "--no-deps" in args, args
    # pip's download flag has no meaning for uv; everything else is the image's line.
    flags = [a for a in args[2:] if a != "--no-cache-dir"]
    _run([uv, "pip", "install", "--python", python, *flags], tmp_path)

    versions = _run(
        [python, "-c", "import importlib.metadata as m, airflow_provider_deltacc, pyspark; "
         "print(m.version('apache-airflow'), pyspark.__version__, "
         "[d.metadata['Name'] for d in m.distributions() if d.metadata['Name'] == 'pyspark-client'])"],
        tmp_path,
    )  # fmt: skip
    airflow_version, pyspark_version, clients = versions.split(maxsplit=2)
    assert airflow_version.startswith("3.3.") and pyspark_version.startswith("4.")
    assert clients.strip() == "[]"
    # The one unmet requirement is the one the lock overrides: full pyspark provides pyspark-client's modules.
    check = subprocess.run([pip, "check"], capture_output=True, text=True, timeout=120)
    problems = [line for line in check.stdout.splitlines() if line.strip()]
    assert problems and all("requires pyspark-client, which is not installed" in line for line in problems), (
        problems
    )
