"""Zip the Airflow-free core for spark-submit ``--py-files``: the job contract (contract), the commit loop
(occ), the Spark engine (engine), the jar cache and Delta settings the job's own session reads (spark_jars),
the Spark job (spark_job) and the library API (conflict_safe).

The core bundle holds only this package's own code. Its one pure-Python runtime dependency,
tenacity, travels as a second archive, so a Spark driver needs nothing installed beyond pyspark
(the Delta Python API ships inside the delta-spark jar, which is also put on ``--py-files``).

``python -m airflow_provider_deltacc.hooks.bundle DIR`` writes the archives into DIR and prints their paths,
for Spark applications and notebooks that call :mod:`airflow_provider_deltacc.conflict_safe`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import airflow_provider_deltacc

CORE_PACKAGES = ("contract", "occ", "engine", "spark_jars", "spark_job", "conflict_safe")
_FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
_NOT_SHIPPED_FOLDERS = frozenset({"__pycache__", "tests", "test", "testing"})


def package_root() -> Path:
    return Path(airflow_provider_deltacc.__file__).resolve().parent


def core_files() -> list[tuple[Path, str]]:
    """(file, name inside the archive) for every module of the bundled core, sorted.

    Only the package's own modules travel: ``.py`` files of the core packages and of their sub-packages
    (folders with an ``__init__.py``). Tests, ``conftest.py``, hidden files, caches, folders that are not
    packages, symlinks and anything that is not Python source (configuration, credentials) stay behind.
    """
    root = package_root()
    files = [(root / "__init__.py", "airflow_provider_deltacc/__init__.py")]
    for sub in CORE_PACKAGES:
        for path in sorted((root / sub).rglob("*.py")):
            if _is_own_module(root, path):
                files.append((path, f"airflow_provider_deltacc/{path.relative_to(root).as_posix()}"))
    return files


def _is_own_module(root: Path, path: Path) -> bool:
    relative = path.relative_to(root)
    name = relative.name
    if path.is_symlink() or not path.is_file():
        return False
    if name.startswith((".", "test_")) or name.endswith("_test.py") or name == "conftest.py":
        return False
    folders = relative.parts[:-1]
    if any(part.startswith(".") or part in _NOT_SHIPPED_FOLDERS for part in folders):
        return False
    # every folder from the core package down must be a package
    return all(
        (root.joinpath(*folders[: depth + 1]) / "__init__.py").is_file() for depth in range(len(folders))
    )


def tenacity_files() -> list[tuple[Path, str]]:
    dist = metadata.distribution("tenacity")
    files = []
    for entry in dist.files or []:
        if entry.parts[0] == "tenacity" and entry.suffix in {".py", ".typed"}:
            files.append((Path(str(dist.locate_file(entry))), entry.as_posix()))
    return sorted(files, key=lambda item: item[1])


def _write_zip(files: Iterable[tuple[Path, str]], directory: Path, stem: str) -> Path:
    entries = [(arcname, path.read_bytes()) for path, arcname in files]
    digest = hashlib.sha256()
    for arcname, data in entries:
        digest.update(arcname.encode())
        digest.update(data)
    target = directory / f"{stem}-{digest.hexdigest()[:12]}.zip"
    if target.exists():
        return target
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".zip.tmp")
    os.close(fd)
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, data in entries:
            archive.writestr(zipfile.ZipInfo(arcname, date_time=_FIXED_ZIP_TIME), data)
    os.replace(tmp, target)
    return target


def build_bundle(directory: Path | None = None) -> list[Path]:
    """Write (or reuse) the py-files archives and return them: the core first, then tenacity.

    :param directory: where to keep the archives; a per-user temp directory by default. Archive names
        carry a content hash, so concurrent tasks share them safely.
    """
    directory = directory or Path(tempfile.gettempdir()) / "deltacc-bundles"
    directory.mkdir(parents=True, exist_ok=True)
    core = _write_zip(core_files(), directory, f"deltacc-core-{airflow_provider_deltacc.__version__}")
    deps = _write_zip(tenacity_files(), directory, f"tenacity-{metadata.version('tenacity')}")
    return [core, deps]


def main(argv: list[str] | None = None) -> int:
    """Write the archives into a directory and print their paths, one per line (``--py-files`` order)."""
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_deltacc.hooks.bundle",
        description="Write the py-files archives of the Airflow-free core (for --py-files).",
    )
    parser.add_argument("directory", type=Path, help="where to write the archives")
    args = parser.parse_args(argv)
    for path in build_bundle(args.directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
