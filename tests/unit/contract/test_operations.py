"""The operation registry is the one vocabulary: the job-spec parser, the engine, the operators, the leases,
the gate and the conflict matrix all derive what an operation is from it."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.conflict_matrix import FOOTPRINTS
from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.op_kinds import (
    MAINTENANCE_KINDS,
    OPERATION_KINDS,
    OpKind,
    op_kind,
    statement_kind,
)
from airflow_provider_deltacc.contract.operations import (
    OPERATIONS,
    SCHEMA_AUTO_MERGE_CONF,
    OperationClass,
    operation,
    operation_class,
)
from airflow_provider_deltacc.contract.spec_parse import parse_spec

pytestmark = pytest.mark.unit

AUTO_MERGE = {SCHEMA_AUTO_MERGE_CONF: "true"}
ROWS = {"kind": "rows", "schema": "id INT", "rows": [[1]]}


def test_every_operation_runs_as_its_own_kind_and_the_matrix_knows_every_kind() -> None:
    assert set(OPERATION_KINDS) == set(OPERATIONS)
    for name, (kind, kinds) in OPERATION_KINDS.items():
        assert kind in kinds, name
    assert set(FOOTPRINTS) == set(OpKind)


def test_maintenance_is_optimize_and_vacuum() -> None:
    assert {op.name for op in OPERATIONS.values() if op.is_maintenance} == {"optimize", "vacuum"}
    assert {OpKind.OPTIMIZE, OpKind.OPTIMIZE_ZORDER, OpKind.VACUUM} == MAINTENANCE_KINDS
    assert all(
        OPERATIONS[name].operation_class is OperationClass.MAINTENANCE for name in ("optimize", "vacuum")
    )


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_the_spec_parser_follows_the_registry_on_sources(name: str) -> None:
    options: dict[str, Any] = {
        "merge": {"keys": ["id"]},
        "update": {"set": {"v": "1"}, "condition": "true"},
        "delete": {"condition": "true"},
        "sql": {"statement": "DELETE FROM {table}"},
    }.get(name, {})
    spec = {"operation": name, "table": "/lake/t", "options": options}
    op = OPERATIONS[name]
    if op.needs_source:
        with pytest.raises(SpecError, match="needs a source"):
            parse_spec(spec)
    else:
        assert parse_spec(spec).operation == name
    if op.reads_source:
        assert parse_spec({**spec, "source": ROWS}).source is not None
    else:
        with pytest.raises(SpecError, match="reads no source"):
            parse_spec({**spec, "source": ROWS})


def test_maintenance_takes_no_txn_identity() -> None:
    txn = {"app_id": "a", "version": 1}
    with pytest.raises(SpecError, match="records no transaction identity"):
        parse_spec({"operation": "vacuum", "table": "/lake/t", "txn": txn})


def test_an_unknown_operation_names_the_registry() -> None:
    with pytest.raises(SpecError, match="use one of append, overwrite_partitions, merge"):
        parse_spec({"operation": "upsert", "table": "/lake/t"})
    with pytest.raises(ValueError, match="operation='upsert' is unknown"):
        operation("upsert")


@pytest.mark.parametrize(
    ("name", "options", "conf", "expected"),
    [
        ("append", {}, {}, OperationClass.BLIND_APPEND),
        ("append", {"merge_schema": True}, {}, OperationClass.SCHEMA_CHANGING),
        ("merge", {}, {}, OperationClass.READ_MODIFY_WRITE),
        ("merge", {}, AUTO_MERGE, OperationClass.SCHEMA_CHANGING),
        ("merge", {}, {SCHEMA_AUTO_MERGE_CONF: " TRUE "}, OperationClass.SCHEMA_CHANGING),
        ("merge", {}, {SCHEMA_AUTO_MERGE_CONF: "false"}, OperationClass.READ_MODIFY_WRITE),
        ("update", {}, AUTO_MERGE, OperationClass.READ_MODIFY_WRITE),
        ("optimize", {}, {}, OperationClass.MAINTENANCE),
        ("sql", {}, {}, OperationClass.READ_MODIFY_WRITE),
        ("sql", {"op_class": "blind_append"}, {}, OperationClass.BLIND_APPEND),
        ("sql", {"op_class": "nonsense"}, {}, OperationClass.READ_MODIFY_WRITE),
    ],
)
def test_operation_class(
    name: str, options: dict[str, Any], conf: dict[str, str], expected: OperationClass
) -> None:
    assert operation_class(name, options, conf) is expected


@pytest.mark.parametrize(
    ("name", "options", "expected"),
    [
        ("append", {}, OpKind.BLIND_APPEND),
        ("append", {"merge_schema": True}, OpKind.SCHEMA_CHANGE),
        ("overwrite_partitions", {}, OpKind.OVERWRITE),
        ("optimize", {}, OpKind.OPTIMIZE),
        ("optimize", {"zorder_by": ["v"]}, OpKind.OPTIMIZE_ZORDER),
        ("vacuum", {}, OpKind.VACUUM),
        ("sql", {"statement": "insert into {table} select * from {table}"}, OpKind.INSERT_SELECT),
        ("sql", {"statement": "SELECT 1"}, OpKind.MERGE),
        ("sql", {"statement": "VACUUM {table}", "op_class": "maintenance"}, OpKind.OPTIMIZE),
        ("sql", {"statement": "  vacuum {table} RETAIN 200 HOURS"}, OpKind.MERGE),
    ],
)
def test_op_kind(name: str, options: dict[str, Any], expected: OpKind) -> None:
    assert op_kind(name, options) is expected


def test_statement_kind_reads_the_verb() -> None:
    assert statement_kind("OPTIMIZE {table}\n ZORDER BY (v)") is OpKind.OPTIMIZE_ZORDER
    assert statement_kind(" vacuum {table}") is OpKind.VACUUM
    assert statement_kind("SELECT 1") is None
