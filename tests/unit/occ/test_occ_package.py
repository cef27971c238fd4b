"""The occ package: public names, cheap import, and no forbidden imports (it runs in the Spark driver)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import airflow_provider_deltacc.occ as occ
from tests.support.imports import imported_roots

pytestmark = pytest.mark.unit

OCC_DIR = Path(occ.__file__).parent
ALLOWED_THIRD_PARTY = {"tenacity"}
FORBIDDEN = {"airflow", "pyspark", "py4j", "delta", "deltalake"}


def test_public_names_resolve() -> None:
    for name in occ.__all__:
        assert getattr(occ, name) is not None, name
    assert callable(occ.classify), "the function, not the submodule"
    assert occ.classify.__module__ == "airflow_provider_deltacc.occ.classifier"
    assert set(dir(occ)) >= set(occ.__all__)
    with pytest.raises(AttributeError):
        _ = occ.not_a_name


def test_classify_stays_a_function_after_the_submodule_is_imported() -> None:
    import airflow_provider_deltacc.occ.classifier  # noqa: F401
    from airflow_provider_deltacc.occ import classify

    assert callable(classify)


def test_import_is_cheap() -> None:
    code = (
        "import sys, airflow_provider_deltacc.occ as o; "
        "heavy = sorted(m for m in ('tenacity', 'airflow', 'pyspark', 'py4j', 'delta', 'deltalake') "
        "if m in sys.modules); print(','.join(heavy)); o.run_commit_loop; print('tenacity' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.splitlines() == ["", "True"]


@pytest.mark.parametrize("path", sorted(OCC_DIR.glob("*.py")), ids=lambda p: p.name)
def test_module_imports_only_stdlib_and_tenacity(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert any(isinstance(node, ast.ImportFrom) and node.module == "__future__" for node in tree.body), (
        "from __future__ import annotations"
    )
    for line, roots in imported_roots(path):
        assert not roots & FORBIDDEN, f"{path.name}:{line} imports {roots & FORBIDDEN}"
        for root in roots - {"airflow_provider_deltacc", "__future__"}:
            assert root in sys.stdlib_module_names or root in ALLOWED_THIRD_PARTY, f"{path.name}: {root}"
