"""DAG files are parsed constantly: the Airflow face must not pull in pyspark, delta or py4j, and the
bundled core (contract/occ/engine/spark_jars/spark_job) must not pull in Airflow. Which layer may import which
is checked in the source by :mod:`tests.unit.test_import_rules`."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import airflow_provider_deltacc

pytestmark = pytest.mark.unit

AIRFLOW_FACE = [
    "import airflow_provider_deltacc.operators as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.sensors as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.triggers as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.hooks as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.decorators as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.retries.policy",
    "import airflow_provider_deltacc.leases",
    "import airflow_provider_deltacc.gate",
    "import airflow_provider_deltacc.turns",
    "import airflow_provider_deltacc.task_groups",
    "import airflow_provider_deltacc.contract.table",
    "import airflow_provider_deltacc.object_storage.connections",
]
BUNDLED_CORE = [
    "import airflow_provider_deltacc.occ as m; m.run_commit_loop; m.classify",
    "import airflow_provider_deltacc.contract.commit_retry",
    "import airflow_provider_deltacc.conflict_matrix",
    "import airflow_provider_deltacc.contract.spec_parse, airflow_provider_deltacc.contract.exit_codes",
    "import airflow_provider_deltacc.spark_job.leave_report, airflow_provider_deltacc.spark_job.report_line",
    "import airflow_provider_deltacc.spark_jars.delta_jars, airflow_provider_deltacc.spark_jars.delta_conf",
    "import airflow_provider_deltacc.conflict_safe as m; [getattr(m, n) for n in m.__all__]",
    "import airflow_provider_deltacc.engine.source_function",
    "import airflow_provider_deltacc.contract.table",
    "import airflow_provider_deltacc.spark_jars.s3_jars",
    "import airflow_provider_deltacc.contract.spec, airflow_provider_deltacc.contract.storage_safety",
    "from airflow_provider_deltacc.object_storage import aws, azure, gcp",
]


def _modules_after(statements: list[str]) -> set[str]:
    code = "import json, sys\n" + "\n".join(statements) + "\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def _roots(modules: set[str], banned: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in banned)


def test_airflow_face_does_not_import_spark() -> None:
    loaded = _modules_after(AIRFLOW_FACE)
    assert "airflow_provider_deltacc.operators.write" in loaded  # the lazy names really were resolved
    leaked = _roots(loaded, {"pyspark", "delta", "py4j"})
    assert not leaked, f"the operators/sensors/triggers/hooks imported {leaked[:8]}"


@pytest.mark.parametrize("package", ["operators", "sensors", "triggers", "hooks", "decorators"])
def test_the_packages_load_their_modules_lazily(package: str) -> None:
    loaded = _modules_after(
        [f"import airflow_provider_deltacc.{package} as m; assert set(m.__all__) <= set(dir(m))"]
    )
    own = sorted(m for m in loaded if m.startswith(f"airflow_provider_deltacc.{package}."))
    assert not own, f"importing {package} loaded {own}"
    after = _modules_after(
        [f"import airflow_provider_deltacc.{package} as m; [getattr(m, n) for n in m.__all__]"]
    )
    assert any(m.startswith(f"airflow_provider_deltacc.{package}.") for m in after)


def test_bundled_core_does_not_import_airflow_or_spark() -> None:
    loaded = _modules_after(BUNDLED_CORE)
    assert "airflow_provider_deltacc.occ.commit_loop" in loaded
    leaked = _roots(loaded, {"airflow", "pyspark", "delta", "py4j"})
    assert not leaked, f"the bundled core imported {leaked[:8]}"


def test_the_library_api_imports_where_airflow_is_not_installed() -> None:
    """A Spark application or notebook calling ``conflict_safe`` has no Airflow: importing it (and the job
    code it runs) must not even try."""
    blocked = "import sys; sys.modules['airflow'] = None"  # any ``import airflow...`` now raises ImportError
    loaded = _modules_after(
        [
            blocked,
            "import airflow_provider_deltacc.conflict_safe as m; [getattr(m, n) for n in m.__all__]",
            "import airflow_provider_deltacc.spark_job.main, airflow_provider_deltacc.engine.run",
        ]
    )
    assert "airflow_provider_deltacc.contract.source_function" in loaded


def test_log_fast_path_runs_in_the_worker_without_airflow_or_spark() -> None:
    loaded = _modules_after(["import airflow_provider_deltacc.delta_log.fast_path"])
    assert "airflow_provider_deltacc.contract.txn" in loaded
    leaked = _roots(loaded, {"airflow", "pyspark", "delta", "py4j", "deltalake"})
    assert not leaked, f"the log fast path imported {leaked[:8]} (deltalake only when it reads a log)"


def _imports(folder: Path) -> list[tuple[Path, str, tuple[str, ...]]]:
    """(file, imported module, imported names) of every ``from X import ...`` in the folder's modules."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.append((path, node.module, tuple(alias.name for alias in node.names)))
    return found


def test_the_operators_never_import_the_advisor() -> None:
    """The advisor reads operators; an operator importing the advisor back would make a cycle."""
    operators = Path(airflow_provider_deltacc.__file__).parent / "operators"
    back = [
        (p.name, m) for p, m, _ in _imports(operators) if m.startswith("airflow_provider_deltacc.advisor")
    ]
    assert not back, f"operators import the advisor: {back}"


def test_no_module_imports_another_package_private_name() -> None:
    root = Path(airflow_provider_deltacc.__file__).parent
    private = [
        (str(path.relative_to(root)), module, name)
        for path, module, names in _imports(root)
        for name in names
        if name.startswith("_")
        and not name.startswith("__")
        and module.startswith("airflow_provider_deltacc.")
        and module.split(".")[1] != path.relative_to(root).parts[0]
    ]
    assert not private, f"private names imported across packages: {private}"
