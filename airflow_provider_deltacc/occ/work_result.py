"""What one attempt of the work returns to the commit loop when it did not raise (the commit loop's ``Work``
is a function of the attempt number that returns a :class:`WorkResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class WorkResult:
    """The result of an attempt that did not raise.

    :param table_version: the table version after the commit (or the current one if nothing was committed).
    :param skipped_duplicate: True when Delta skipped the write because its txn identity was already
        committed.
    :param metrics: operation metrics (rows inserted, files added, ...), JSON-safe.
    """

    table_version: int | None = None
    skipped_duplicate: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
