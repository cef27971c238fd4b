"""What one successful attempt of the work returns to the commit loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class WorkOutcome:
    """The result of an attempt that did not raise.

    :param table_version: the table version after the commit (or the current one if nothing was committed).
    :param skipped_duplicate: True when Delta skipped the write because its txn identity was already
        committed.
    :param metrics: operation metrics (rows inserted, files added, ...), JSON-safe.
    """

    table_version: int | None = None
    skipped_duplicate: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
