"""Run one Delta transaction in a thread, held at a :class:`~tests.support.gate.Gate`, and always let it go.

``hold(gate, action)`` starts ``action`` in a thread, waits until the held Spark job reached the gate
(so the transaction has read its snapshot), hands control to the test body (which commits the rival
transaction), then releases the gate and joins the thread, even when the body fails. The outcome is
read afterwards with :meth:`HeldCall.raised`, which fails the test if the expected exception did not
happen.

``gate_udf`` is the gate as a *deterministic* SQL function: Delta's DELETE and UPDATE reject
non-deterministic conditions (``INVALID_NON_DETERMINISTIC_EXPRESSIONS``), so ``Gate.column`` (which is
non-deterministic) cannot be used there.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from tests.support.gate import Gate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

E = TypeVar("E", bound=BaseException)


class HeldCall:
    """``action`` running in a daemon thread; records what it raised."""

    def __init__(self, action: Callable[[], object], name: str = "held-txn") -> None:
        self._action = action
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            self._action()
        except BaseException as exc:  # inspected by raised()
            self.error = exc

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def raised(self, expected: type[E]) -> E:
        """Return the exception the call raised; fail unless it finished and raised ``expected``."""
        assert not self.is_alive(), "the held transaction is still running"
        assert self.error is not None, f"the held transaction committed; expected {expected.__name__}"
        assert isinstance(self.error, expected), f"expected {expected.__name__}, got {self.error!r}"
        return self.error


def wait_entered(gate: Gate, call: HeldCall) -> None:
    """Wait until the held job reached the gate; fail fast if the call ended first."""
    deadline = time.monotonic() + gate.timeout_s
    while not gate.entered_file.exists():
        if not call.is_alive():
            raise AssertionError(f"the held transaction ended before reaching the gate: {call.error!r}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the held Spark job never reached the gate {gate.directory}")
        time.sleep(0.05)


@contextmanager
def hold(gate: Gate, action: Callable[[], object], *, name: str = "held-txn") -> Iterator[HeldCall]:
    """Start ``action``, wait until it is held at ``gate``, yield; then release the gate and join."""
    call = HeldCall(action, name)
    call.start()
    try:
        wait_entered(gate, call)
        yield call
    finally:
        gate.release()
        call.join(gate.timeout_s)
    if call.is_alive():
        raise AssertionError(f"the held transaction did not finish within {gate.timeout_s}s of its release")


def gate_udf(spark: SparkSession, gate: Gate, *, only: int | None = None, name: str | None = None) -> str:
    """Register the gate as a deterministic boolean SQL function of one argument; return its name.

    It is always true; its first evaluation blocks until ``gate.release()`` (or the gate's timeout).
    With ``only``, just an evaluation on that value blocks: when the held job scans several files, put
    that value in one file so that one task is held and the other task slot stays free for the rival.
    With ``name``, it is registered under that name (e.g. again in a child session, which does not see
    the parent's functions).
    """
    from pyspark.sql.types import BooleanType

    entered, released = str(gate.entered_file), str(gate.released_file)
    timeout_s = gate.timeout_s

    def hold_row(value: object) -> bool:
        if (only is None or value == only) and not os.path.exists(released):
            open(entered, "a").close()
            deadline = time.monotonic() + timeout_s
            while not os.path.exists(released) and time.monotonic() < deadline:
                time.sleep(0.05)
        return True

    name = name or f"gate_{uuid.uuid4().hex[:8]}"
    spark.udf.register(name, hold_row, BooleanType())
    return name
