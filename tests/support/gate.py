"""Hold a Spark job at a known point, across processes, to interleave Delta transactions deterministically.

A Python UDF runs in a Spark Python worker, a separate process, so the gate is a pair of files: the UDF
creates ``entered`` when it is first evaluated and then blocks until ``released`` exists. The test
thread waits for ``entered`` (the held transaction has read its snapshot), commits a rival transaction,
then releases the gate. Each task that reaches the gate also leaves ``entered-<host>``, the address its
executor binds (``SPARK_LOCAL_IP``), so a test on a cluster can wait until a task is held on a given host.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


class Gate:
    """A cross-process gate; see the module docstring."""

    def __init__(self, directory: Path, *, timeout_s: float = 120.0) -> None:
        self.directory = directory / f"gate-{uuid.uuid4().hex[:8]}"
        self.directory.mkdir(parents=True)
        self.timeout_s = timeout_s

    @classmethod
    def existing(cls, directory: Path, *, timeout_s: float = 120.0) -> Gate:
        """The gate another process made in ``directory`` (e.g. a Spark driver holding at the test's gate)."""
        gate = cls.__new__(cls)
        gate.directory, gate.timeout_s = directory, timeout_s
        return gate

    @property
    def entered_file(self) -> Path:
        return self.directory / "entered"

    @property
    def released_file(self) -> Path:
        return self.directory / "released"

    def wait_entered(self) -> None:
        self.wait_entered_on(())

    def wait_entered_on(self, hosts: tuple[str, ...]) -> None:
        """Wait until the gate was entered, and by a task on each of ``hosts`` (executors' addresses)."""
        deadline = time.monotonic() + self.timeout_s
        files = [self.entered_file, *(self.directory / f"entered-{host}" for host in hosts)]
        while not all(file.exists() for file in files):
            if time.monotonic() > deadline:
                missing = [file.name for file in files if not file.exists()]
                raise TimeoutError(f"the held Spark job never reached the gate {self.directory}: {missing}")
            time.sleep(0.05)

    def release(self) -> None:
        self.released_file.touch()

    def hold(self, frame: DataFrame, column: str) -> DataFrame:
        """``frame`` filtered by :meth:`column` of ``column``, built for the frame's kind of session (classic
        or Spark Connect): the first row evaluated blocks at the gate."""
        connect = type(frame).__module__.startswith("pyspark.sql.connect")
        return frame.where(self.column(column, connect=connect))

    def column(self, value: Column | str, *, connect: bool = False) -> Column:
        """A boolean column that is always true but blocks at the gate the first time it is evaluated.

        :param value: the column the gate reads (its value is ignored).
        :param connect: build it for a Spark Connect session (its UDF runs in the server's Python workers).
        """
        from pyspark.sql import functions as classic_functions
        from pyspark.sql.connect import functions as connect_functions
        from pyspark.sql.types import BooleanType

        F: Any = connect_functions if connect else classic_functions

        entered, released, timeout_s = str(self.entered_file), str(self.released_file), self.timeout_s

        def hold(_: Any) -> bool:
            import os
            import time as _time

            if not os.path.exists(released):
                open(f"{entered}-{os.environ.get('SPARK_LOCAL_IP', 'unknown')}", "a").close()
                open(entered, "a").close()
                deadline = _time.monotonic() + timeout_s
                while not os.path.exists(released) and _time.monotonic() < deadline:
                    _time.sleep(0.05)
            return True

        udf = F.udf(hold, BooleanType(), useArrow=False).asNondeterministic()
        return udf(F.col(value) if isinstance(value, str) else value)
