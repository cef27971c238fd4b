"""pyspark's process-wide Spark Connect mark, held while an operation runs on a Spark Connect session.

pyspark decides per process, not per session, whether code is Spark Connect code: ``pyspark.sql.functions``
(``F.col``, ``F.lit``, ``F.udf``, window functions), ``DataType.fromDDL``, the pandas UDF factory and the
session builder all dispatch on the environment variable ``SPARK_CONNECT_MODE_ENABLED``. pyspark sets it
when a Connect session is created and never removes it. Without it, in a process with no JVM (a
``spark_connect`` task), ``F.col("id") + 1`` raises ``AssertionError`` and ``F.udf(...)`` raises
``SESSION_OR_CONTEXT_NOT_EXISTS``.

The provider creates its Connect sessions without leaving the mark behind
(:func:`connect_session_keeping_mark`), so a classic session can still start later in the same process, and
holds the mark for as long as an operation runs on a Connect session (:func:`spark_connect_code`): the
source function's call and the write of its DataFrame run as Spark Connect code.

What a process holding both kinds of session (the library API beside a classic session, the tests) gets:
classic and Connect operations work one after the other, and side by side in threads as long as, while a
Connect operation runs, no other thread builds ``pyspark.sql.functions`` columns or UDFs, or parses DDL
types with ``DataType.fromDDL``, for a classic session (pyspark would build Spark Connect ones). SQL
strings, ``DataFrame`` methods taking column names or SQL expressions (``where("a > 1")``,
``selectExpr``), and ``df["col"]`` columns are unaffected. No classic ``SparkContext`` can start while the
mark is held; one already running is found with :func:`running_classic_session` (pyspark's own
``SparkSession.getActiveSession()`` and the session builder look for a Connect session while it is held).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The environment variable pyspark reads to tell Spark Connect code from classic code.
CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"

T = TypeVar("T")

_lock = threading.Lock()
_holders = 0
# Whether the mark was there before the first holder (pyspark's, or the application's): then it stays.
_set_before = False


@contextmanager
def spark_connect_code() -> Iterator[None]:
    """Hold the mark for the block: the process is a Spark Connect client in pyspark's eyes.

    Reference counted across threads: the mark is removed when the last holder leaves, and only when it was
    not set before the first one came.
    """
    global _holders, _set_before
    with _lock:
        if _holders == 0:
            _set_before = CONNECT_MODE_ENV in os.environ
            if not _set_before:
                os.environ[CONNECT_MODE_ENV] = "1"
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and not _set_before:
                os.environ.pop(CONNECT_MODE_ENV, None)


def connect_session_keeping_mark(create: Callable[[], T]) -> T:
    """Call ``create`` (which builds a Spark Connect session, and with it sets pyspark's mark), then put the
    mark back as it was, under the same lock as :func:`spark_connect_code`, so that a session created while
    another thread's operation holds the mark never takes the mark away from it.

    :param create: builds the session.
    """
    with _lock:
        before = os.environ.get(CONNECT_MODE_ENV)
        try:
            return create()
        finally:
            if before is None:
                os.environ.pop(CONNECT_MODE_ENV, None)
            else:
                os.environ[CONNECT_MODE_ENV] = before


def running_classic_session() -> SparkSession | None:
    """The classic session running in this process (this thread's active one, else the default one), or None.

    Found through the SparkContext and the JVM, not through ``SparkSession.getActiveSession()`` or the
    builder, which dispatch on the mark: while another thread's Connect operation holds it, they look for a
    Spark Connect session and would miss, or refuse to build, the classic session that is there.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    context = SparkContext._active_spark_context
    if context is None or context._jvm is None:
        return None
    sessions: Any = SparkSession._get_j_spark_session_class(context._jvm)
    for found in (sessions.getActiveSession(), sessions.getDefaultSession()):
        if found.isDefined():
            return SparkSession(context, found.get())
    return None
