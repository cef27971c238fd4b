"""A statement's kind is read past comments, a leading WITH, case and white space, never inside a literal;
a text of more than one statement is refused, in the job spec and when the DAG is parsed."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.exceptions import SpecError, SqlTextError
from airflow_provider_deltacc.contract.op_kinds import (
    STATEMENT_KINDS,
    OpKind,
    enables_allow_listed_feature,
    statement_kind,
)
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.contract.sql_text import split_statements
from airflow_provider_deltacc.exceptions import DeltaCCInputError

pytestmark = pytest.mark.unit

#: One statement of every kind the registry reads from a verb.
STATEMENTS = {
    OpKind.MERGE: "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
    OpKind.UPDATE: "UPDATE t SET v = 'merge' WHERE id = 1",
    OpKind.DELETE: "DELETE FROM t WHERE id = 1",
    OpKind.OVERWRITE: "INSERT OVERWRITE t SELECT * FROM s",
    OpKind.INSERT_SELECT: "INSERT INTO t SELECT * FROM s",
    OpKind.OPTIMIZE_ZORDER: "OPTIMIZE t\n  ZORDER BY (v)",
    OpKind.OPTIMIZE: "OPTIMIZE t WHERE d = 'zorder'",  # a keyword inside a literal is not one
    OpKind.CLUSTER_BY: "ALTER TABLE t CLUSTER BY (v)",
    OpKind.SCHEMA_CHANGE: "ALTER TABLE t ADD COLUMNS (x INT)",
    OpKind.VACUUM: "VACUUM t RETAIN 168 HOURS",
}
PREFIXES = {
    "bare": "",
    "line comment": "-- nightly run; OPTIMIZE later\n",
    "block comment": "/* owner: data-eng */ ",
    "nested comment": "/* outer /* inner */ still a comment */\n",
    "white space": " \n\t ",
    "cte": "WITH s AS (SELECT 1 AS id, 'x' AS v) ",
    "ctes with columns": "-- c\nWITH RECURSIVE a (id) AS (SELECT (1)), s AS (SELECT id FROM a) ",
}


def test_the_table_covers_every_kind_the_registry_reads_from_a_verb() -> None:
    assert set(STATEMENTS) == {kind for _, kind in STATEMENT_KINDS}


@pytest.mark.parametrize("prefix", list(PREFIXES.values()), ids=list(PREFIXES))
@pytest.mark.parametrize("kind", list(STATEMENTS), ids=[k.value for k in STATEMENTS])
def test_every_kind_is_read_past_comments_and_ctes_in_any_case(prefix: str, kind: OpKind) -> None:
    for text in (
        prefix + STATEMENTS[kind],
        (prefix + STATEMENTS[kind]).lower(),
        prefix + STATEMENTS[kind] + ";",
    ):
        assert statement_kind(text) is kind, text


@pytest.mark.parametrize(
    "text",
    ["SELECT 1", "WITH s AS (SELECT 'MERGE INTO t') SELECT * FROM s", "-- MERGE INTO t\nSELECT 1", "", "  "],
)
def test_a_verb_in_a_comment_a_literal_or_a_cte_says_nothing(text: str) -> None:
    assert statement_kind(text) is None


def test_an_allow_listed_feature_is_read_past_a_comment_and_in_either_quoting() -> None:
    assert enables_allow_listed_feature(
        "-- enable\nALTER TABLE t SET TBLPROPERTIES (delta.enableRowTracking = true)"
    )
    assert enables_allow_listed_feature(
        "ALTER TABLE t SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    assert not enables_allow_listed_feature("ALTER TABLE t SET TBLPROPERTIES ('delta.appendOnly' = 'true')")


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("UPDATE t SET v = 1", 1),
        ("UPDATE t SET v = 1;", 1),
        ("UPDATE t SET v = 1; -- done\n", 1),
        ("UPDATE t SET v = ';'", 1),
        ("UPDATE t SET v = 1 /* ; */", 1),
        ("UPDATE `a;b` SET v = 1", 1),
        ("UPDATE t SET v = 'it\\'s; fine'", 1),
        ("UPDATE t SET v = 1; DELETE FROM t", 2),
        (";;", 0),
    ],
)
def test_statements_are_split_at_semicolons_outside_literals_and_comments(text: str, count: int) -> None:
    assert len(split_statements(text)) == count


@pytest.mark.parametrize("text", ["SELECT 'open", "SELECT `open", "SELECT 1 /* open"])
def test_an_unterminated_literal_or_comment_cannot_be_read(text: str) -> None:
    with pytest.raises(SqlTextError, match="never closed"):
        split_statements(text)


def _sql_spec(statement: str) -> dict[str, object]:
    return {"operation": "sql", "table": "/t", "options": {"statement": statement}}


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        ("UPDATE t SET v = 1; DELETE FROM t WHERE v = 2", "holds 2 statements"),
        ("-- nothing here\n;", "holds no statement"),
        ("UPDATE t SET v = 'open", "cannot be read as SQL"),
    ],
)
def test_the_job_spec_refuses_anything_but_one_statement(statement: str, says: str) -> None:
    with pytest.raises(SpecError, match=says) as raised:
        parse_spec(_sql_spec(statement))
    assert raised.value.field == "options.statement"


def test_one_statement_with_a_trailing_semicolon_and_comments_is_accepted() -> None:
    spec = parse_spec(_sql_spec("-- fix\nUPDATE t SET v = 'a;b' WHERE id = 1; -- done"))
    assert spec.operation == "sql"


def test_a_sql_task_of_two_statements_is_refused_when_the_dag_is_parsed() -> None:
    from airflow_provider_deltacc.operators import DeltaSqlOperator

    with pytest.raises(DeltaCCInputError, match=r"fix_orders: statement=.*holds 2 statements") as raised:
        DeltaSqlOperator(task_id="fix_orders", table="/t", statement="UPDATE t SET v = 1; DELETE FROM t")
    assert raised.value.field == "statement"
