"""Recognise a job that failed because Spark went away, not because of its input or a conflict.

A Spark Connect server that stops answering surfaces, once the client's own retries are spent, as a gRPC
``UNAVAILABLE`` (or ``DEADLINE_EXCEEDED``) error; a classic driver whose JVM died surfaces as py4j's
``Py4JNetworkError``. Both are infrastructure: Airflow may retry the task, and its txn identity keeps a retry
from writing twice if the lost operation did commit. Nothing here imports grpc, pyspark or py4j.
"""

from __future__ import annotations

from collections.abc import Iterator

_GRPC_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
_JVM_GONE = frozenset({"Py4JNetworkError"})


def unavailable_reason(exc: BaseException) -> str | None:
    """What went away, when ``exc`` (or an exception in its cause chain) says Spark became unreachable.

    :param exc: the exception the job caught.
    :returns: e.g. ``Spark Connect server (gRPC UNAVAILABLE)``, or None when Spark did not go away.
    """
    for node in exception_chain(exc):
        code = _grpc_code(node)
        if code in _GRPC_CODES:
            return f"Spark Connect server (gRPC {code})"
        if type(node).__name__ in _JVM_GONE:
            return "the Spark driver JVM"
    return None


def _grpc_code(exc: BaseException) -> str | None:
    getter = getattr(exc, "getGrpcStatusCode", None) or getattr(exc, "code", None)
    if not callable(getter):
        return None
    try:
        code = getter()
    except Exception:  # not a gRPC error after all
        return None
    return getattr(code, "name", None) if code is not None else None


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen and len(seen) < 16:
        seen.add(id(node))
        yield node
        node = node.__cause__ or node.__context__
