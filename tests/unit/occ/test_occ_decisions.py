"""The retry decision table, every kind against every operation class, and the advice."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.occ import ADVICE, decide_conflict, decision_table_markdown
from airflow_provider_deltacc.occ.decisions import DECISION_TABLE

pytestmark = pytest.mark.unit

K = ConflictKind
Op = OperationClass
ALWAYS = dict.fromkeys(Op, True)
NEVER = dict.fromkeys(Op, False)

# What the reference (section 6) and ARCHITECTURE.md require, written out independently of the table.
EXPECTED_FIRST_TIME: dict[ConflictKind, dict[OperationClass, bool]] = {
    K.APPEND: ALWAYS,
    K.DELETE_READ: ALWAYS,
    K.DELETE_DELETE: ALWAYS,
    K.MAX_COMMIT_ATTEMPTS: ALWAYS,
    K.METADATA_CHANGED: {**ALWAYS, Op.SCHEMA_CHANGING: False},
    K.PROTOCOL_CHANGED: NEVER,
    K.CONCURRENT_TRANSACTION: NEVER,  # without an owned txn identity
    K.CONCURRENT_WRITE: {
        Op.BLIND_APPEND: True,
        Op.MAINTENANCE: True,
        Op.READ_MODIFY_WRITE: False,
        Op.SCHEMA_CHANGING: False,
    },
}


@pytest.mark.parametrize("op_class", list(Op), ids=lambda o: o.name)
@pytest.mark.parametrize("kind", list(K), ids=lambda k: k.name)
def test_every_kind_and_operation_class(kind: ConflictKind, op_class: OperationClass) -> None:
    decision = decide_conflict(kind, op_class, owns_txn_identity=False)

    assert decision.retry is EXPECTED_FIRST_TIME[kind][op_class]
    assert decision.reason


@pytest.mark.parametrize("op_class", list(Op), ids=lambda o: o.name)
def test_concurrent_transaction_retries_only_with_an_owned_identity(op_class: OperationClass) -> None:
    owned = decide_conflict(K.CONCURRENT_TRANSACTION, op_class, owns_txn_identity=True)
    foreign = decide_conflict(K.CONCURRENT_TRANSACTION, op_class, owns_txn_identity=False)

    assert owned.retry is True
    assert "skipped" in owned.reason
    assert foreign.retry is False
    assert "txn" in foreign.reason


@pytest.mark.parametrize("op_class", [Op.BLIND_APPEND, Op.READ_MODIFY_WRITE, Op.MAINTENANCE])
def test_metadata_changed_replans_once(op_class: OperationClass) -> None:
    first = decide_conflict(K.METADATA_CHANGED, op_class, owns_txn_identity=False, metadata_replans_used=0)
    second = decide_conflict(K.METADATA_CHANGED, op_class, owns_txn_identity=False, metadata_replans_used=1)

    assert first.retry is True
    assert first.max_replans == 1
    assert second.retry is False
    assert "again" in second.reason


def test_metadata_changed_never_replans_a_schema_change() -> None:
    decision = decide_conflict(
        K.METADATA_CHANGED, Op.SCHEMA_CHANGING, owns_txn_identity=True, metadata_replans_used=0
    )

    assert decision.retry is False
    assert "schema" in decision.reason


@pytest.mark.parametrize("op_class", list(Op), ids=lambda o: o.name)
def test_protocol_changed_never_retries_even_with_identity(op_class: OperationClass) -> None:
    assert decide_conflict(K.PROTOCOL_CHANGED, op_class, owns_txn_identity=True).retry is False


def test_retryable_kinds_have_no_replan_limit() -> None:
    for kind in (K.APPEND, K.DELETE_READ, K.DELETE_DELETE, K.MAX_COMMIT_ATTEMPTS):
        assert decide_conflict(kind, Op.READ_MODIFY_WRITE, owns_txn_identity=False).max_replans is None


def test_table_is_complete() -> None:
    assert set(DECISION_TABLE) == set(K)
    for row in DECISION_TABLE.values():
        assert set(row) == set(Op)


def test_markdown_renders_every_cell() -> None:
    markdown = decision_table_markdown()
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]

    assert len(rows) == len(K)
    for kind, row in zip(K, rows, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[0] == f"`{kind.name}`"
        assert cells[1:] == [DECISION_TABLE[kind][op][0].value for op in Op]
    for op in Op:
        assert f"`{op.name}`" in markdown.splitlines()[0]
    assert "re-plan once" in markdown
    assert "commitLarge" not in markdown


def test_advice_for_every_kind() -> None:
    assert set(ADVICE) == set(K)
    for text in ADVICE.values():
        assert text.endswith(".")
        assert text[0].isupper(), text
        assert text.count(". ") == 0, "one sentence"
    assert "partition" in ADVICE[K.APPEND]
    assert "OPTIMIZE" in ADVICE[K.DELETE_READ]
    assert "Create the table" in ADVICE[K.PROTOCOL_CHANGED]
    assert "app id" in ADVICE[K.CONCURRENT_TRANSACTION]


def test_a_pinned_write_that_conflicted_in_its_own_partition_is_not_told_to_pin() -> None:
    from airflow_provider_deltacc.contract.conflict import Conflict
    from airflow_provider_deltacc.occ.advice import advice_for

    append = Conflict(K.APPEND, partition="[p=a]")
    unpinned = advice_for(append)
    pinned = advice_for(append, pinned_columns=["p"])
    assert unpinned == ADVICE[K.APPEND] and unpinned.startswith("Pin the target partitions")
    assert pinned.startswith("This write is already pinned to its partitions (p)"), pinned
    assert "([p=a])" in pinned and "Pin the target" not in pinned and "disjoint partitions" in pinned
    assert len(pinned) < 220, "a retry reason carries it, and Airflow keeps 500 characters of a reason"
    for kind in (K.DELETE_READ, K.DELETE_DELETE):
        text = advice_for(Conflict(kind), pinned_columns=["p", "q"])
        assert (
            text.startswith("This write is already pinned to its partitions (p, q)") and text != ADVICE[kind]
        )
    # Pinning says nothing about schema changes: those keep their advice.
    metadata = Conflict(K.METADATA_CHANGED)
    assert advice_for(metadata, pinned_columns=["p"]) == ADVICE[K.METADATA_CHANGED]
