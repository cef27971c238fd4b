"""Recognise a job that failed because Spark went away, not because of its input or a conflict.

A Spark Connect server that stops answering surfaces, once the client's own retries are spent, as a gRPC
``UNAVAILABLE`` (or ``DEADLINE_EXCEEDED``) error; a classic driver whose JVM died surfaces as py4j's
``Py4JNetworkError``. Both are infrastructure: Airflow may retry the task, and its txn identity keeps a retry
from writing twice if the lost operation did commit. Nothing here imports grpc, pyspark or py4j.

A Connect server that dies and is started again on its port (by a supervisor) within the client's retries
looks different: the new server does not know the session. It answers ``INVALID_HANDLE.SESSION_CHANGED`` or
``INVALID_HANDLE.SESSION_NOT_FOUND`` (or a response whose server-side session id differs from the one the
client saw first), and pyspark then closes the session, so every later call raises ``NO_ACTIVE_SESSION``.
The first three say the server lost the session and nothing else does: they are infrastructure here.
``NO_ACTIVE_SESSION`` and ``INVALID_HANDLE.SESSION_CLOSED`` are also what a user's own code gets when it
stops the session, so :func:`session_lost` only names them; whoever holds the connection asks the server
whether it went away (:meth:`~airflow_provider_deltacc.hooks.connect.SparkConnectRunner.run`).
"""

from __future__ import annotations

from collections.abc import Iterator

_GRPC_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED"})
_JVM_GONE = frozenset({"Py4JNetworkError"})
#: The server lost the session: it was restarted (or dropped the session) under a running client.
SERVER_LOST_SESSION = ("INVALID_HANDLE.SESSION_CHANGED", "INVALID_HANDLE.SESSION_NOT_FOUND")
#: pyspark's words when a response comes from another server-side session (its ``PySparkAssertionError``).
_SERVER_SESSION_CHANGED = "Received incorrect server side session identifier"
#: The session is closed on the client or on the server: a lost server, or the session's own ``stop()``.
SESSION_CLOSED = ("NO_ACTIVE_SESSION", "INVALID_HANDLE.SESSION_CLOSED")


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
        lost = _named(node, SERVER_LOST_SESSION)
        if lost is None and _SERVER_SESSION_CHANGED in _text(node):
            lost = "server side session changed"
        if lost is not None:
            return f"Spark Connect server (session lost: {lost})"
    return None


def session_lost(exc: BaseException) -> str | None:
    """The error class, when ``exc`` (or its cause chain) says the Spark Connect session is closed: the
    server may have gone away, or the session was stopped by code of the job's own. Only the server can tell
    which.

    :param exc: the exception the job caught.
    :returns: ``NO_ACTIVE_SESSION`` or ``INVALID_HANDLE.SESSION_CLOSED``, else None.
    """
    for node in exception_chain(exc):
        if (name := _named(node, SESSION_CLOSED)) is not None:
            return name
    return None


def _named(exc: BaseException, classes: tuple[str, ...]) -> str | None:
    """The first of ``classes`` that ``exc`` is (its pyspark error condition) or names in its message."""
    condition = _condition(exc)
    text = _text(exc)
    for name in classes:
        if condition == name or name in text:
            return name
    return None


def _condition(exc: BaseException) -> str | None:
    condition = _ask(exc, "getCondition", "getErrorClass")
    return condition if isinstance(condition, str) else None


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ fails names nothing
        return ""


def _grpc_code(exc: BaseException) -> str | None:
    code = _ask(exc, "getGrpcStatusCode", "code")
    return getattr(code, "name", None) if code is not None else None


def _ask(exc: BaseException, *getters: str) -> object:
    """What the first of ``getters`` that ``exc`` has returns (pyspark's and gRPC's accessors); None when it
    has none, or when it fails (not such an error after all)."""
    getter = next((g for name in getters if callable(g := getattr(exc, name, None))), None)
    if getter is None:
        return None
    try:
        return getter()
    except Exception:
        return None


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen and len(seen) < 16:
        seen.add(id(node))
        yield node
        node = node.__cause__ or node.__context__
