"""The classifier over recorded messages, fake delta/py4j/PySpark exceptions, wrapped causes and negatives."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.contract.conflict import MESSAGE_LIMIT, ConflictKind
from airflow_provider_deltacc.occ import classify
from airflow_provider_deltacc.occ.classifier import match_text
from tests.unit.occ.fakes import (
    BrokenStr,
    CapturedException,
    DeadGatewayThrowable,
    FakeJavaThrowable,
    LegacyCapturedException,
    Py4JJavaError,
    delta_class,
)
from tests.unit.occ.recorded import fixture_text, load_cases

pytestmark = pytest.mark.unit

CASES = load_cases()
CONFLICT_CASES = [c for c in CASES if c["kind"] is not None]
NEGATIVE_CASES = [c for c in CASES if c["kind"] is None]

DELTA_CLASSES = {
    "ConcurrentAppendException": ConflictKind.APPEND,
    "ConcurrentDeleteReadException": ConflictKind.DELETE_READ,
    "ConcurrentDeleteDeleteException": ConflictKind.DELETE_DELETE,
    "MetadataChangedException": ConflictKind.METADATA_CHANGED,
    "ProtocolChangedException": ConflictKind.PROTOCOL_CHANGED,
    "ConcurrentTransactionException": ConflictKind.CONCURRENT_TRANSACTION,
    "ConcurrentWriteException": ConflictKind.CONCURRENT_WRITE,
}

V41_APPEND = fixture_text("spark_4_1_append_with_hint.txt")


def test_fixture_set_covers_every_kind_and_both_sources() -> None:
    assert {ConflictKind(c["kind"]) for c in CONFLICT_CASES} == set(ConflictKind)
    rs_kinds = {c["kind"] for c in CONFLICT_CASES if c["source"] == "delta-rs"}
    assert rs_kinds == {k.value for k in ConflictKind} - {"concurrent_write"}
    assert len(NEGATIVE_CASES) >= 10


@pytest.mark.parametrize("case", CONFLICT_CASES, ids=[c["file"] for c in CONFLICT_CASES])
def test_recorded_message_text(case: dict[str, Any]) -> None:
    conflict = classify(case["text"])

    assert conflict is not None
    assert conflict.kind is ConflictKind(case["kind"])
    assert conflict.source == case["source"]
    assert conflict.table == case.get("table")
    assert conflict.partition == case.get("partition")
    assert conflict.winning_version == case.get("winning_version")
    assert conflict.winning_operation == case.get("winning_operation")
    assert conflict.create_race is case.get("create_race", False)
    assert conflict.exception_type == ""
    assert conflict.message
    assert len(conflict.message) <= MESSAGE_LIMIT
    assert "\tat " not in conflict.message, "stack frames are dropped"


@pytest.mark.parametrize("case", CONFLICT_CASES, ids=[c["file"] for c in CONFLICT_CASES])
def test_recorded_message_raised_as_plain_exception(case: dict[str, Any]) -> None:
    """A wrapper type we do not know, carrying the recorded text: the text fallback finds it."""
    conflict = classify(RuntimeError(case["text"]))

    assert conflict is not None
    assert conflict.kind is ConflictKind(case["kind"])
    assert conflict.exception_type == "RuntimeError"


@pytest.mark.parametrize("case", NEGATIVE_CASES, ids=[c["file"] for c in NEGATIVE_CASES])
def test_recorded_non_conflicts(case: dict[str, Any]) -> None:
    assert classify(case["text"]) is None
    assert classify(RuntimeError(case["text"])) is None


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("bad literal for partition date"),
        KeyError("date"),
        TimeoutError("spark-submit timed out"),
        RuntimeError(""),
        RuntimeError("Concurrent writers are welcome here"),
        RuntimeError("ConcurrentModificationException in HashMap"),
        RuntimeError("DELTA_CONCURRENT_APPENDS"),
        RuntimeError("MY_DELTA_CONCURRENT_WRITE"),
        RuntimeError("Failed to commit transaction: 12 rows"),
        RuntimeError("delta_concurrent_append"),
        KeyboardInterrupt(),
        BrokenStr(),
    ],
    ids=repr,
)
def test_non_conflict_exceptions(exc: BaseException) -> None:
    assert classify(exc) is None


def test_analysis_exception_is_not_a_conflict() -> None:
    analysis_exception = type("AnalysisException", (Exception,), {})
    exc = CapturedException(
        "[DELTA_FAILED_TO_MERGE_FIELDS] Failed to merge fields", "DELTA_FAILED_TO_MERGE_FIELDS"
    )
    assert classify(exc) is None
    assert (
        classify(analysis_exception("[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column cannot be resolved"))
        is None
    )


# ---- (a) Python classes named like delta-spark's, found anywhere in the MRO


@pytest.mark.parametrize(("name", "kind"), DELTA_CLASSES.items())
def test_delta_class_names(name: str, kind: ConflictKind) -> None:
    klass = delta_class(name)
    conflict = classify(klass("message text with no tokens at all"))

    assert conflict is not None
    assert conflict.kind is kind
    assert conflict.source == "delta-spark"
    assert conflict.exception_type.endswith(name)


def test_class_name_deep_in_the_mro_wins_over_text() -> None:
    base = delta_class("ConcurrentDeleteReadException")
    captured = type("CapturedException", (Exception,), {})
    leaf = type("DeltaSparkFlavouredError", (captured, base), {})

    conflict = classify(leaf("[DELTA_CONCURRENT_APPEND] text of another kind"))

    assert conflict is not None
    assert conflict.kind is ConflictKind.DELETE_READ


def test_class_name_with_recorded_text_extracts_details() -> None:
    conflict = classify(delta_class("ConcurrentAppendException")(V41_APPEND))

    assert conflict is not None
    assert conflict.kind is ConflictKind.APPEND
    assert (conflict.table, conflict.winning_version, conflict.winning_operation, conflict.partition) == (
        "`orders`",
        7,
        "WRITE",
        "[date=2026-11-20]",
    )


def test_base_class_alone_is_not_a_conflict_kind() -> None:
    assert classify(delta_class("DeltaConcurrentModificationException")("something")) is None


def test_real_delta_spark_classes() -> None:
    import delta.exceptions.base as base  # delta-spark is a dependency: its absence must fail, not skip

    exc = base.ConcurrentAppendException(message=V41_APPEND)

    conflict = classify(exc)

    assert conflict is not None
    assert conflict.kind is ConflictKind.APPEND
    assert conflict.partition == "[date=2026-11-20]"


def test_real_deltalake_commit_failed_error() -> None:
    import deltalake.exceptions as exceptions  # a dependency too

    exc = exceptions.CommitFailedError("Failed to commit transaction: Metadata changed since last commit.")

    conflict = classify(exc)

    assert conflict is not None
    assert conflict.kind is ConflictKind.METADATA_CHANGED
    assert conflict.source == "delta-rs"
    assert conflict.exception_type.endswith("CommitFailedError")


# ---- (b) raw Py4JJavaError: JVM class name, error class, cause chain


@pytest.mark.parametrize(("name", "kind"), DELTA_CLASSES.items())
@pytest.mark.parametrize("package", ["io.delta.exceptions", "org.apache.spark.sql.delta"])
def test_py4j_java_class_name(package: str, name: str, kind: ConflictKind) -> None:
    java = FakeJavaThrowable(f"{package}.{name}", "no tokens in here")
    conflict = classify(Py4JJavaError("An error occurred while calling o1.execute", java))

    assert conflict is not None
    assert conflict.kind is kind
    assert conflict.exception_type.endswith("Py4JJavaError")


def test_py4j_details_come_from_the_java_message() -> None:
    java = FakeJavaThrowable(
        "io.delta.exceptions.ConcurrentDeleteReadException",
        fixture_text("spark_4_1_delete_read_with_hint.txt"),
    )
    conflict = classify(Py4JJavaError("An error occurred while calling o123.execute", java))

    assert conflict is not None
    assert conflict.kind is ConflictKind.DELETE_READ
    assert conflict.table == "spark_catalog.sales.orders"
    assert conflict.winning_version == 41
    assert conflict.winning_operation == "OPTIMIZE"
    assert conflict.partition == "[date=2026-11-20, region=eu]"
    assert conflict.message.startswith("[DELTA_CONCURRENT_DELETE_READ.WITH_PARTITION_HINT]")


def test_py4j_error_class_on_a_generic_java_class() -> None:
    java = FakeJavaThrowable(
        "org.apache.spark.sql.delta.DeltaIllegalStateException",
        "This commit has failed as it has been tried 10000000 times",
        error_class="DELTA_MAX_COMMIT_RETRIES_EXCEEDED",
    )
    conflict = classify(Py4JJavaError("An error occurred while calling o9.save", java))

    assert conflict is not None
    assert conflict.kind is ConflictKind.MAX_COMMIT_ATTEMPTS


def test_py4j_error_class_with_subclass_suffix() -> None:
    java = FakeJavaThrowable(
        "some.vendor.WrappedThrowable", "", error_class="DELTA_CONCURRENT_DELETE_DELETE.WITHOUT_HINT"
    )
    conflict = classify(Py4JJavaError("An error occurred", java))

    assert conflict is not None
    assert conflict.kind is ConflictKind.DELETE_DELETE


def test_py4j_cause_chain_is_unwrapped() -> None:
    delta = FakeJavaThrowable(
        "io.delta.exceptions.ConcurrentAppendException", fixture_text("spark_4_1_append_without_hint.txt")
    )
    middle = FakeJavaThrowable("org.apache.spark.SparkException", "Job aborted.", cause=delta)
    top = FakeJavaThrowable(
        "org.apache.spark.sql.streaming.StreamingQueryException", "Query terminated", cause=middle
    )

    conflict = classify(Py4JJavaError("An error occurred while calling o77.awaitTermination", top))

    assert conflict is not None
    assert conflict.kind is ConflictKind.APPEND
    assert conflict.table == "spark_catalog.default.events"
    assert conflict.winning_version == 118


def test_py4j_cyclic_cause_chain_terminates() -> None:
    node = FakeJavaThrowable("java.lang.RuntimeException", "loop")
    node.cause = node

    assert classify(Py4JJavaError("An error occurred", node)) is None


def test_py4j_cause_beyond_the_depth_bound_is_not_followed() -> None:
    node = FakeJavaThrowable("io.delta.exceptions.ConcurrentAppendException", "")
    for _ in range(20):
        node = FakeJavaThrowable("java.lang.RuntimeException", "wrapper", cause=node)

    assert classify(Py4JJavaError("An error occurred", node)) is None


def test_py4j_java_concurrent_modification_exception_is_not_delta() -> None:
    java = FakeJavaThrowable("java.util.ConcurrentModificationException", "HashMap changed")
    assert classify(Py4JJavaError("An error occurred while calling o5.collect", java)) is None


def test_py4j_dead_gateway_falls_back_to_text() -> None:
    exc = Py4JJavaError(
        "An error occurred while calling o5.execute.\n: io.delta.exceptions.ConcurrentWriteException: boom",
        DeadGatewayThrowable(),
    )
    conflict = classify(exc)

    assert conflict is not None
    assert conflict.kind is ConflictKind.CONCURRENT_WRITE


def test_py4j_feature_drop_revalidation_is_not_a_conflict() -> None:
    java = FakeJavaThrowable(
        "org.apache.spark.sql.delta.DeltaTableFeatureException",
        fixture_text("neg_feature_drop_revalidation.txt"),
        error_class="DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL",
    )
    assert classify(Py4JJavaError("An error occurred", java)) is None


# ---- (c) PySpark captured exceptions: getCondition (4.x) / getErrorClass (3.x)


def test_pyspark_condition() -> None:
    exc = CapturedException("opaque", condition="DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT")
    conflict = classify(exc)

    assert conflict is not None
    assert conflict.kind is ConflictKind.APPEND


def test_pyspark_legacy_error_class() -> None:
    conflict = classify(LegacyCapturedException("opaque", error_class="DELTA_METADATA_CHANGED"))

    assert conflict is not None
    assert conflict.kind is ConflictKind.METADATA_CHANGED


def test_pyspark_condition_none_falls_back_to_text() -> None:
    """Classic Delta conversions carry no origin, so getCondition() is None; the [..] prefix decides."""
    exc = CapturedException(fixture_text("spark_3_3_delete_delete.txt"), condition=None)
    conflict = classify(exc)

    assert conflict is not None
    assert conflict.kind is ConflictKind.DELETE_DELETE
    # delta-spark 3.3 writes the winner's CommitInfo without its version: only the operation is stated.
    assert (conflict.winning_version, conflict.winning_operation) == (None, "DELETE")


def test_pyspark_unrelated_condition_with_conflict_text() -> None:
    exc = CapturedException(
        "[STREAM_FAILED] Query terminated with exception: " + V41_APPEND, condition="STREAM_FAILED"
    )
    conflict = classify(exc)

    assert conflict is not None
    assert conflict.kind is ConflictKind.APPEND


def test_pyspark_converted_cause_in_private_attribute() -> None:
    inner = delta_class("ConcurrentTransactionException")("A conflicting metadata domain d is added.")
    outer = CapturedException(
        "[TASK_WRITE_FAILED] Task failed while writing rows", "TASK_WRITE_FAILED", inner
    )

    conflict = classify(outer)

    assert conflict is not None
    assert conflict.kind is ConflictKind.CONCURRENT_TRANSACTION


# ---- (d) text: whole tokens, suffixes, FQCNs, simple names


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[DELTA_CONCURRENT_DELETE_READ] x", ConflictKind.DELETE_READ),
        ("[DELTA_CONCURRENT_DELETE_DELETE] x", ConflictKind.DELETE_DELETE),
        ("[DELTA_CONCURRENT_DELETE_READ.WITH_PARTITION_HINT] x", ConflictKind.DELETE_READ),
        ("[DELTA_CONCURRENT_DELETE_DELETE.WITHOUT_HINT] x", ConflictKind.DELETE_DELETE),
        ("[DELTA_CONCURRENT_APPEND.WITHOUT_HINT] x", ConflictKind.APPEND),
        ("error class DELTA_CONCURRENT_WRITE.", ConflictKind.CONCURRENT_WRITE),
        ("DELTA_MAX_COMMIT_RETRIES_EXCEEDED", ConflictKind.MAX_COMMIT_ATTEMPTS),
        ("(io.delta.exceptions.ProtocolChangedException) x", ConflictKind.PROTOCOL_CHANGED),
        ("org.apache.spark.sql.delta.MetadataChangedException: x", ConflictKind.METADATA_CHANGED),
        ("delta.exceptions.captured.ConcurrentDeleteReadException: x", ConflictKind.DELETE_READ),
        ("ConcurrentTransactionException: x", ConflictKind.CONCURRENT_TRANSACTION),
        ("Failed to commit transaction: 3", ConflictKind.MAX_COMMIT_ATTEMPTS),
    ],
)
def test_text_tokens(text: str, kind: ConflictKind) -> None:
    conflict = classify(text)
    assert conflict is not None
    assert conflict.kind is kind


@pytest.mark.parametrize(
    "text",
    [
        "DELTA_CONCURRENT_DELETE_READER",
        "DELTA_CONCURRENT_DELETE_",
        "DELTA_CONCURRENT_DELETE",
        "XDELTA_CONCURRENT_APPEND",
        "DELTA_CONCURRENT_APPEND_V2",
        "DELTA_METADATA_CHANGED2",
        "ConcurrentAppendExceptionHandler: registered",
        "io.delta.exceptions.ConcurrentAppendExceptionFactory",
        "see ConcurrentAppendException for details",
        "Failed to commit transaction: 3 files",
    ],
)
def test_text_tokens_need_whole_words(text: str) -> None:
    assert match_text(text) is None


def test_delete_read_never_matches_delete_delete() -> None:
    read = classify("[DELTA_CONCURRENT_DELETE_READ.WITH_PARTITION_HINT] Transaction conflict detected")
    delete = classify("[DELTA_CONCURRENT_DELETE_DELETE.WITH_PARTITION_HINT] Transaction conflict detected")

    assert read is not None and read.kind is ConflictKind.DELETE_READ
    assert delete is not None and delete.kind is ConflictKind.DELETE_DELETE


def test_earliest_token_wins_within_a_tier() -> None:
    text = "[DELTA_CONCURRENT_WRITE] first, then later [DELTA_CONCURRENT_APPEND]"
    assert match_text(text) == (ConflictKind.CONCURRENT_WRITE, "delta-spark")


def test_error_class_beats_phrase() -> None:
    text = "[DELTA_METADATA_CHANGED] ... Files were added to the root of the table by a concurrent update"
    assert match_text(text) == (ConflictKind.METADATA_CHANGED, "delta-spark")


def test_message_is_trimmed() -> None:
    conflict = classify("[DELTA_CONCURRENT_APPEND] " + "x" * 2000)

    assert conflict is not None
    assert len(conflict.message) == MESSAGE_LIMIT
    assert conflict.message.endswith("...")


def test_truncated_conflicting_commit_json_still_gives_version_and_operation() -> None:
    text = (
        "[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added to partition [d=1] by a "
        'concurrent update.\nConflicting commit: {"version":12,"operation":"MERGE","operationParameters":{'
        '"predicate":"[\\"x\\"]"}'
    )
    conflict = classify(text)

    assert conflict is not None
    assert (conflict.winning_version, conflict.winning_operation) == (12, "MERGE")


def test_read_version_is_not_the_winning_version() -> None:
    text = '[DELTA_METADATA_CHANGED] x\nConflicting commit: {"readVersion":3,"operation":"WRITE"}'
    conflict = classify(text)

    assert conflict is not None
    assert conflict.winning_version is None
    assert conflict.winning_operation == "WRITE"


def test_protocol_changed_at_version_zero_is_a_create_race() -> None:
    text = '[DELTA_PROTOCOL_CHANGED] ProtocolChangedException: x\nConflicting commit: {"version":0}'
    conflict = classify(text)

    assert conflict is not None
    assert conflict.create_race is True


def test_create_race_only_for_protocol_changed() -> None:
    conflict = classify('[DELTA_CONCURRENT_APPEND] x\nConflicting commit: {"version":0,"operation":"WRITE"}')

    assert conflict is not None
    assert conflict.create_race is False


# ---- (e) wrapped as __cause__ / __context__


def test_conflict_as_cause() -> None:
    inner = delta_class("ConcurrentAppendException")(V41_APPEND)
    try:
        try:
            raise inner
        except Exception as exc:
            raise RuntimeError("merge step failed") from exc
    except RuntimeError as outer:
        conflict = classify(outer)

    assert conflict is not None
    assert conflict.kind is ConflictKind.APPEND
    assert conflict.exception_type.endswith("ConcurrentAppendException")


def test_conflict_as_context() -> None:
    try:
        try:
            raise RuntimeError(fixture_text("rs_delete_read.txt"))
        except RuntimeError:
            raise ValueError("while cleaning up") from None
    except ValueError as outer:
        outer.__suppress_context__ = False
        conflict = classify(outer)

    assert conflict is not None
    assert conflict.kind is ConflictKind.DELETE_READ
    assert conflict.source == "delta-rs"


def test_cyclic_cause_chain_terminates() -> None:
    a = RuntimeError("a")
    b = RuntimeError("b")
    a.__cause__ = b
    b.__cause__ = a

    assert classify(a) is None


def test_deep_cause_chain_is_bounded() -> None:
    exc: BaseException = delta_class("ConcurrentAppendException")("deep")
    for i in range(40):
        wrapper = RuntimeError(f"wrapper {i}")
        wrapper.__cause__ = exc
        exc = wrapper

    assert classify(exc) is None


def test_outer_exception_wins_over_its_cause() -> None:
    inner = delta_class("ConcurrentAppendException")("inner")
    outer = delta_class("ProtocolChangedException")("outer")
    outer.__cause__ = inner

    conflict = classify(outer)

    assert conflict is not None
    assert conflict.kind is ConflictKind.PROTOCOL_CHANGED


# ---- (f) delta-rs


def test_delta_rs_commit_failed_class_with_text() -> None:
    delta_error = type("DeltaError", (Exception,), {})
    commit_failed = type("CommitFailedError", (delta_error,), {})

    conflict = classify(commit_failed(fixture_text("rs_delete_delete.txt")))

    assert conflict is not None
    assert conflict.kind is ConflictKind.DELETE_DELETE
    assert conflict.source == "delta-rs"
    assert conflict.message.startswith("Failed to commit transaction: Commit failed")


def test_delta_rs_max_attempts_only_as_a_whole_line() -> None:
    assert match_text("Failed to commit transaction: 15") == (ConflictKind.MAX_COMMIT_ATTEMPTS, "delta-rs")
    assert match_text("CommitFailedError: x\nFailed to commit transaction: 15\n") == (
        ConflictKind.MAX_COMMIT_ATTEMPTS,
        "delta-rs",
    )
    assert match_text("Failed to commit transaction: 15 of 20 files") is None


def test_delta_rs_create_race() -> None:
    delta_error = type("DeltaError", (Exception,), {})
    conflict = classify(delta_error("Delta transaction failed, version 0 already exists."))

    assert conflict is not None
    assert conflict.kind is ConflictKind.PROTOCOL_CHANGED
    assert conflict.create_race is True
    assert conflict.source == "delta-rs"


def test_a_version_inside_the_winners_operation_parameters_is_not_the_winning_version() -> None:
    """delta-spark <= 4.0 writes the winner's CommitInfo without a version (and not always as valid JSON)."""
    text = (
        "[DELTA_CONCURRENT_WRITE] ConcurrentWriteException: A concurrent transaction has written new data "
        "since the current transaction read the table. Please try the operation again.\n"
        'Conflicting commit: {"timestamp":1795515181318,"operation":"RESTORE","operationParameters":'
        '{"version":2,"timestamp":null,"mode":Append},"readVersion":4}\n'
    )

    conflict = classify(text)

    assert conflict is not None
    assert (conflict.winning_version, conflict.winning_operation) == (None, "RESTORE")
