"""Recognise Delta commit conflicts in exceptions from delta-spark, PySpark, py4j and delta-rs.

Nothing here imports pyspark, py4j, delta or deltalake: those exceptions are recognised by class name,
by duck-typed JVM calls and by message text, in this order for each exception in the cause chain:

1. a Delta conflict class name anywhere in the MRO (the seven Python classes share no base class);
2. a JVM throwable (py4j ``java_exception``, PySpark's ``_origin``): its class name or error class,
   walking ``getCause()``;
3. PySpark's ``getCondition()`` (4.x) or ``getErrorClass()`` (3.x), None for classic Delta conversions;
4. the message text, by whole token: error classes, then fully qualified class names, then
   ``SimpleName:``, then delta-rs texts, then Delta's template sentences.

``DELTA_FEATURE_DROP_CONFLICT_REVALIDATION_FAIL`` is deliberately not a conflict here: it is raised only
by ``ALTER TABLE ... DROP FEATURE``, which this provider never runs, and it matches none of the kinds.
delta-rs "A table already exists at: ..." (write ``mode="error"``) is not a conflict either: it is a
check made before any commit, so a retry can never succeed.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator

from airflow_provider_deltacc.contract.conflict import Conflict, ConflictKind, ConflictSource
from airflow_provider_deltacc.occ.extract import extract_details, summarize_message
from airflow_provider_deltacc.occ.signatures import (
    BY_CLASS_NAME,
    BY_ERROR_CLASS,
    CREATE_RACE_PHRASES,
    DELTA_JVM_PACKAGES,
    SIGNATURES,
)

_MAX_CHAIN = 16
_MAX_JVM_DEPTH = 8

_Tier = tuple[tuple[re.Pattern[str], ConflictKind, ConflictSource], ...]


def _build_tiers() -> tuple[_Tier, ...]:
    error_classes: list[tuple[re.Pattern[str], ConflictKind, ConflictSource]] = []
    qualified: list[tuple[re.Pattern[str], ConflictKind, ConflictSource]] = []
    simple: list[tuple[re.Pattern[str], ConflictKind, ConflictSource]] = []
    delta_rs: list[tuple[re.Pattern[str], ConflictKind, ConflictSource]] = []
    phrases: list[tuple[re.Pattern[str], ConflictKind, ConflictSource]] = []
    packages = "|".join(re.escape(p) for p in DELTA_JVM_PACKAGES)
    for sig in SIGNATURES:
        # \b keeps DELTA_CONCURRENT_DELETE_READ from matching inside a longer token; the optional
        # group takes a subclass such as .WITH_PARTITION_HINT or .WITHOUT_HINT.
        error_classes.append(
            (re.compile(rf"\b{re.escape(sig.error_class)}(?:\.[A-Z][A-Z0-9_]*)?\b"), sig.kind, "delta-spark")
        )
        if sig.class_name:
            name = re.escape(sig.class_name)
            qualified.append((re.compile(rf"\b(?:{packages})\.{name}\b"), sig.kind, "delta-spark"))
            simple.append((re.compile(rf"\b{name}:"), sig.kind, "delta-spark"))
        delta_rs.extend((re.compile(p, re.MULTILINE), sig.kind, "delta-rs") for p in sig.delta_rs)
        phrases.extend((re.compile(p), sig.kind, "delta-spark") for p in sig.phrases)
    return tuple(tuple(t) for t in (error_classes, qualified, simple, delta_rs, phrases))


_TIERS = _build_tiers()
_CREATE_RACE = tuple(re.compile(p) for p in CREATE_RACE_PHRASES)


def classify(exc: BaseException | str) -> Conflict | None:
    """Return the conflict an exception (or its message) represents, or None if it is not a conflict.

    Exceptions wrapped as ``__cause__``/``__context__`` are examined too (bounded, cycle-safe).
    Never raises, even when a JVM call fails.

    :param exc: the exception caught around a commit, or its text (e.g. from a log or a report).
    """
    if isinstance(exc, str):
        return _from_text(exc, exception_type="")
    for node in _exception_chain(exc):
        conflict = _classify_one(node)
        if conflict is not None:
            return conflict
    return None


def match_text(text: str) -> tuple[ConflictKind, ConflictSource] | None:
    """Return the conflict kind and source a message names, or None.

    Tiers are tried from the most to the least specific; within a tier the earliest match wins, so
    the outermost message decides when a text quotes several exceptions.

    :param text: the message to search.
    """
    for tier in _TIERS:
        best: tuple[int, ConflictKind, ConflictSource] | None = None
        for pattern, kind, source in tier:
            found = pattern.search(text)
            if found and (best is None or found.start() < best[0]):
                best = (found.start(), kind, source)
        if best is not None:
            return best[1], best[2]
    return None


def _classify_one(exc: BaseException) -> Conflict | None:
    exc_type = _type_name(exc)
    kind = _kind_from_mro(exc)
    if kind is not None:
        return _conflict(kind, _safe_str(exc), exc_type, "delta-spark")
    for attr in ("java_exception", "_origin"):
        root = getattr(exc, attr, None)
        if root is not None:
            hit = _from_jvm(root)
            if hit is not None:
                return _conflict(hit[0], hit[1] or _safe_str(exc), exc_type, "delta-spark")
    condition = _condition(exc)
    if condition is not None:
        kind = BY_ERROR_CLASS.get(condition.split(".", 1)[0])
        if kind is not None:
            return _conflict(kind, _safe_str(exc), exc_type, "delta-spark")
    return _from_text(_safe_str(exc), exc_type)


def _from_text(text: str, exception_type: str) -> Conflict | None:
    found = match_text(text)
    if found is None:
        return None
    return _conflict(found[0], text, exception_type, found[1])


def _conflict(kind: ConflictKind, text: str, exception_type: str, source: ConflictSource) -> Conflict:
    details = extract_details(text)
    create_race = kind is ConflictKind.PROTOCOL_CHANGED and (
        # Delta adds the "empty directory" sentence exactly when the winner is version 0.
        details.winning_version == 0 or any(p.search(text) for p in _CREATE_RACE)
    )
    return Conflict(
        kind=kind,
        table=details.table,
        winning_version=details.winning_version,
        winning_operation=details.winning_operation,
        partition=details.partition,
        message=summarize_message(text),
        exception_type=exception_type,
        source=source,
        create_race=create_race,
    )


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    queue: deque[BaseException] = deque([exc])
    yielded = 0
    while queue and yielded < _MAX_CHAIN:
        current = queue.popleft()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yielded += 1
        yield current
        # PySpark's CapturedException keeps the converted JVM cause in ``_cause``, not ``__cause__``.
        for nxt in (current.__cause__, current.__context__, getattr(current, "_cause", None)):
            if isinstance(nxt, BaseException):
                queue.append(nxt)


def _kind_from_mro(exc: BaseException) -> ConflictKind | None:
    for klass in type(exc).__mro__:
        kind = BY_CLASS_NAME.get(klass.__name__)
        if kind is not None:
            return kind
    return None


def _from_jvm(root: object) -> tuple[ConflictKind, str | None] | None:
    """Walk a JVM throwable and its causes; return the first conflict kind and that throwable's message."""
    node: object | None = root
    for _ in range(_MAX_JVM_DEPTH):
        if node is None:
            return None
        kind = _jvm_kind(node)
        if kind is not None:
            message = _jcall(node, "getMessage")
            return kind, message if isinstance(message, str) and message else None
        node = _jcall(node, "getCause")
    return None


def _jvm_kind(node: object) -> ConflictKind | None:
    class_name = _jcall(_jcall(node, "getClass"), "getName")
    if isinstance(class_name, str):
        package, _, simple = class_name.rpartition(".")
        if package in DELTA_JVM_PACKAGES and simple in BY_CLASS_NAME:
            return BY_CLASS_NAME[simple]
    for method in ("getErrorClass", "getCondition"):
        error_class = _jcall(node, method)
        if isinstance(error_class, str):
            kind = BY_ERROR_CLASS.get(error_class.split(".", 1)[0])
            if kind is not None:
                return kind
    return None


def _condition(exc: BaseException) -> str | None:
    # PySpark 4.x deprecates getErrorClass (FutureWarning), so ask it only when getCondition is absent.
    method = "getCondition" if callable(getattr(exc, "getCondition", None)) else "getErrorClass"
    value = _jcall(exc, method)
    return value if isinstance(value, str) else None


def _jcall(obj: object | None, name: str) -> object | None:
    """Call a no-argument method if it exists; any failure (e.g. a dead py4j gateway) gives None."""
    if obj is None:
        return None
    try:
        method = getattr(obj, name, None)
        if not callable(method):
            return None
        return method()
    except Exception:
        return None


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return ""


def _type_name(exc: BaseException) -> str:
    klass = type(exc)
    if klass.__module__ == "builtins":
        return klass.__qualname__
    return f"{klass.__module__}.{klass.__qualname__}"
