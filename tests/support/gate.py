"""Hold a Spark job at a known point, across processes, to interleave Delta transactions deterministically.

A Python UDF runs in a Spark Python worker, a separate process, so the gate is a pair of files: the UDF
creates ``entered`` when it is first evaluated and then blocks until ``released`` exists. The test
thread waits for ``entered`` (the held transaction has read its snapshot), commits a rival transaction,
then releases the gate.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column


class Gate:
    """A cross-process gate; see the module docstring."""

    def __init__(self, directory: Path, *, timeout_s: float = 120.0) -> None:
        self.directory = directory / f"gate-{uuid.uuid4().hex[:8]}"
        self.directory.mkdir(parents=True)
        self.timeout_s = timeout_s

    @property
    def entered_file(self) -> Path:
        return self.directory / "entered"

    @property
    def released_file(self) -> Path:
        return self.directory / "released"

    def wait_entered(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not self.entered_file.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the held Spark job never reached the gate {self.directory}")
            time.sleep(0.05)

    def release(self) -> None:
        self.released_file.touch()

    def column(self, value: Column | str) -> Column:
        """A boolean column that is always true but blocks at the gate the first time it is evaluated."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import BooleanType

        entered, released, timeout_s = str(self.entered_file), str(self.released_file), self.timeout_s

        def hold(_: Any) -> bool:
            import os
            import time as _time

            if not os.path.exists(released):
                open(entered, "a").close()
                deadline = _time.monotonic() + timeout_s
                while not os.path.exists(released) and _time.monotonic() < deadline:
                    _time.sleep(0.05)
            return True

        udf = F.udf(hold, BooleanType(), useArrow=False).asNondeterministic()
        return udf(F.col(value) if isinstance(value, str) else value)
