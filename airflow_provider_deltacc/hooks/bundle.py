"""Zip the Airflow-free core for spark-submit ``--py-files``: what a Spark driver runs and nothing else.

The core bundle is the static import closure of the driver's entry points (:data:`DRIVER_ENTRY_POINTS`: the
Spark job ``spark_job.main`` and its ``__main__``), walked with ``ast`` through every import of this package,
including imports inside functions and under ``TYPE_CHECKING``. It may reach only the driver's rooms
(:data:`CORE_PACKAGES`: the job contract, the commit loop occ, the Spark engine, the jar cache and Delta
settings the job's own session reads, the Spark job and the library API); a module of those rooms that no
entry point reaches (what only the Airflow worker or the set-up step uses, such as
:mod:`airflow_provider_deltacc.spark_jars.jar_setup`) stays behind.

The library API (:data:`LIBRARY_ENTRY_POINTS`: ``conflict_safe``, for Spark applications and notebooks)
travels in an archive of its own instead of the core's: the core's modules and the library API's (one
package cannot span two archives). A spark-submit driver never imports it, so a job is not shipped it.

The archives hold only this package's own code. Its one pure-Python runtime dependency, tenacity, travels as
an archive of its own, so a Spark driver needs nothing installed beyond pyspark (the Delta Python API ships
inside the delta-spark jar, which is also put on ``--py-files``).

``python -m airflow_provider_deltacc.hooks.bundle DIR`` writes the library API's archive and tenacity's into
DIR and prints their paths, for Spark applications and notebooks that call
:mod:`airflow_provider_deltacc.conflict_safe`.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import airflow_provider_deltacc

PACKAGE = airflow_provider_deltacc.__name__
#: The rooms a Spark driver's code may come from; the bundle refuses a closure that leaves them.
CORE_PACKAGES = ("contract", "occ", "engine", "spark_jars", "spark_job", "conflict_safe")
#: What a spark-submit driver starts from: the job, run as a file or a module.
DRIVER_ENTRY_POINTS = (f"{PACKAGE}.spark_job.main", f"{PACKAGE}.spark_job.__main__")
#: What a Spark application or notebook calls: the library API.
LIBRARY_ENTRY_POINTS = (f"{PACKAGE}.conflict_safe",)
_FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
_NOT_SHIPPED_FOLDERS = frozenset({"__pycache__", "tests", "test", "testing"})


def package_root() -> Path:
    return Path(airflow_provider_deltacc.__file__).resolve().parent


def core_files() -> list[tuple[Path, str]]:
    """(file, name inside the archive) for every module of the bundled core, sorted by name.

    The modules are :func:`driver_closure` (every package on the way included). Only the package's own
    source travels: a reached module that is a test, ``conftest.py``, a hidden file, in a cache or in a
    folder that is not a package, or a symlink, is refused rather than shipped.

    :raises ValueError: when the closure reaches a module outside :data:`CORE_PACKAGES` or one that is not
        the package's own source.
    """
    return _checked_files(driver_closure(package_root()))


def library_files() -> list[tuple[Path, str]]:
    """(file, name inside the archive) for the library API's archive: the core's modules and the library
    API's closure, checked as :func:`core_files` checks the core's.

    :raises ValueError: as :func:`core_files`.
    """
    return _checked_files(driver_closure(package_root(), DRIVER_ENTRY_POINTS + LIBRARY_ENTRY_POINTS))


def _checked_files(modules: dict[str, Path]) -> list[tuple[Path, str]]:
    root = package_root()
    files = []
    for module, path in sorted(modules.items()):
        if module != PACKAGE and module.split(".")[1] not in CORE_PACKAGES:
            raise ValueError(f"the Spark driver's code imports {module}, which is outside {CORE_PACKAGES}")
        if not _is_own_module(root, path):
            raise ValueError(f"the Spark driver's code imports {module} from {path}, not a module of ours")
        files.append((path, f"{PACKAGE}/{path.relative_to(root).as_posix()}"))
    return sorted(files, key=lambda item: item[1])


def driver_closure(
    root: Path | None = None, entry_points: tuple[str, ...] = DRIVER_ENTRY_POINTS
) -> dict[str, Path]:
    """Module name -> source file of every module of this package a Spark driver can import: the entry
    points, everything they import, transitively, and every package on the way.

    Every import counts, wherever it is written: at module level, inside functions, under ``TYPE_CHECKING``,
    ``import x``, ``from x import y`` (``y`` counts when it is a module), relative ones, and
    ``importlib.import_module("...")`` of a constant name.

    :param root: the package's folder (the installed one by default).
    :param entry_points: where to start: the job's (:data:`DRIVER_ENTRY_POINTS`) or the library API's.
    """
    root = root or package_root()
    found: dict[str, Path] = {}
    todo = list(entry_points)
    while todo:
        module = todo.pop()
        if module in found:
            continue
        path = _source_of(root, module)
        if path is None:
            raise ValueError(f"the Spark driver's code imports {module}, which has no source under {root}")
        found[module] = path
        parts = module.split(".")
        todo.extend(".".join(parts[:depth]) for depth in range(1, len(parts)))  # the packages on the way
        todo.extend(name for name in _imports_of(root, module, path) if name not in found)
    return found


def _source_of(root: Path, module: str) -> Path | None:
    relative = module.split(".")[1:]
    folder = root.joinpath(*relative)
    if (folder / "__init__.py").is_file():
        return folder / "__init__.py"
    file = folder.with_suffix(".py") if relative else None
    return file if file is not None and file.is_file() else None


def _imports_of(root: Path, module: str, path: Path) -> set[str]:
    """The modules of this package that ``module`` (whose source is ``path``) imports."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - (node.level - 1)], *([base] if base else [])])
            named.add(base)
            # ``from package import name``: the name may be a module
            named.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and node.args:
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            first = node.args[0]
            if name in {"import_module", "__import__"} and isinstance(first, ast.Constant):
                named.add(str(first.value))
    ours = set()
    for name in named:
        if name != PACKAGE and not name.startswith(f"{PACKAGE}."):
            continue
        parts = name.split(".")
        # the longest prefix that is a module (``from x.mod import Class`` names ``x.mod.Class``)
        for depth in range(len(parts), 0, -1):
            if _source_of(root, ".".join(parts[:depth])) is not None:
                ours.add(".".join(parts[:depth]))
                break
    return ours


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


def build_bundle(directory: Path | None = None, *, library: bool = False) -> list[Path]:
    """Write (or reuse) the py-files archives and return them: the core (or, with ``library``, the library
    API's archive), then tenacity.

    :param directory: where to keep the archives; a per-user temp directory by default. Archive names
        carry a content hash, so concurrent tasks share them safely.
    :param library: the library API's archive instead of the core (for applications and notebooks).
    """
    directory = directory or Path(tempfile.gettempdir()) / "deltacc-bundles"
    directory.mkdir(parents=True, exist_ok=True)
    version = airflow_provider_deltacc.__version__
    if library:
        ours = _write_zip(library_files(), directory, f"deltacc-library-{version}")
    else:
        ours = _write_zip(core_files(), directory, f"deltacc-core-{version}")
    return [ours, _write_zip(tenacity_files(), directory, f"tenacity-{metadata.version('tenacity')}")]


def main(argv: list[str] | None = None) -> int:
    """Write the archives into a directory and print their paths, one per line (``--py-files`` order)."""
    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_deltacc.hooks.bundle",
        description="Write the py-files archives of the Airflow-free core (for --py-files).",
    )
    parser.add_argument("directory", type=Path, help="where to write the archives")
    args = parser.parse_args(argv)
    for path in build_bundle(args.directory, library=True):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
