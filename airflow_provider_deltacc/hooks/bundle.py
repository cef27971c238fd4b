"""Zip the Airflow-free core (occ, engine, spark_job) for spark-submit ``--py-files``.

The core bundle holds only this package's own code. Its one pure-Python runtime dependency,
tenacity, travels as a second archive, so a Spark driver needs nothing installed beyond pyspark
(the Delta Python API ships inside the delta-spark jar, which is also put on ``--py-files``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import airflow_provider_deltacc

CORE_PACKAGES = ("occ", "engine", "spark_job")
_FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


def package_root() -> Path:
    return Path(airflow_provider_deltacc.__file__).resolve().parent


def core_files() -> list[tuple[Path, str]]:
    """(file, name inside the archive) for every module of the bundled core, sorted."""
    root = package_root()
    files = [(root / "__init__.py", "airflow_provider_deltacc/__init__.py")]
    for sub in CORE_PACKAGES:
        for path in sorted((root / sub).rglob("*.py")):
            files.append((path, f"airflow_provider_deltacc/{path.relative_to(root).as_posix()}"))
    return files


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
