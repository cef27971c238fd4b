"""One home for errors: the core's in :mod:`airflow_provider_deltacc.contract.exceptions`, the face's in
:mod:`airflow_provider_deltacc.exceptions`, which re-exports the core's; older import paths give the same
classes, and an error still crosses a process boundary whole."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import airflow_provider_deltacc
import airflow_provider_deltacc.contract.exceptions as core
import airflow_provider_deltacc.exceptions as face
from airflow_provider_deltacc.contract.commit_report import CommitReport
from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind

pytestmark = pytest.mark.unit

PACKAGE = Path(airflow_provider_deltacc.__file__).parent
HOMES = {PACKAGE / "contract" / "exceptions.py", PACKAGE / "exceptions.py"}
#: A private carrier of a bare message inside the retry policy's classifier; never raised to a caller.
PRIVATE = {("policy.py", "_DeltaMessage")}


def _exception_classes_outside_the_homes() -> list[str]:
    defined: dict[str, str] = {}
    bases: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined[node.name] = str(path.relative_to(PACKAGE))
                bases[node.name] = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        for base in bases.get(name, []):
            if base in seen:
                continue
            builtin = getattr(__import__("builtins"), base, None)
            if isinstance(builtin, type) and issubclass(builtin, BaseException):
                return True
            if base in ("AirflowException",) or is_exception(base, seen | {name}):
                return True
        return False

    return sorted(
        f"{where}: {name}"
        for name, where in defined.items()
        if is_exception(name) and PACKAGE / where not in HOMES and (Path(where).name, name) not in PRIVATE
    )


def test_every_exception_class_lives_in_one_of_the_two_exception_modules() -> None:
    assert _exception_classes_outside_the_homes() == []


def test_the_face_module_reaches_every_core_error_as_the_same_class() -> None:
    core_errors = {
        name
        for name, value in vars(core).items()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == core.__name__
    }
    assert core_errors <= set(face.__all__)
    assert all(getattr(face, name) is getattr(core, name) for name in core_errors)


def test_errors_cross_a_process_boundary_whole() -> None:
    spec_error = pickle.loads(pickle.dumps(core.SpecError("options.keys", [], "must name a column")))
    assert (spec_error.field, spec_error.value, str(spec_error)) == (
        "options.keys",
        [],
        "options.keys=[]: must name a column",
    )
    report = CommitReport(operation="merge", table="/lake/orders")
    conflict = Conflict(kind=ConflictKind.APPEND, table="/lake/orders", message="files added")
    fatal = pickle.loads(pickle.dumps(core.ConflictFatalError(report, conflict, "a schema change raced it")))
    assert isinstance(fatal, face.ConflictError) and fatal.reason == "a schema change raced it"
    assert fatal.conflict.kind is ConflictKind.APPEND and fatal.report.table == "/lake/orders"
    try:
        raise ValueError("bad row")
    except ValueError as raised:
        source = core.SourceFunctionError("build_rows", raised)
    back = pickle.loads(pickle.dumps(source))
    assert isinstance(back, core.UserCodeError) and (back.name, back.error_type) == (
        "build_rows",
        "ValueError",
    )
    assert str(back) == str(source)
