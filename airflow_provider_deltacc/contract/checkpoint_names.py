"""Which complete checkpoints a Delta log holds, from its file names alone (the Delta protocol's
"Checkpoints"):

* **classic**: ``<version>.checkpoint.parquet``;
* **multi-part**: ``<version>.checkpoint.<part>.<parts>.parquet``, complete only when every part is there
  (Delta writes the parts one by one);
* **v2**: ``<version>.checkpoint.<uuid>.json`` or ``.parquet``.

One reading of the names for the provider's own log reader (``delta_log/``) and for the Spark Connect
backend, which lists the log through the server (``engine/``). Pure Python: it travels in the job's bundle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_CHECKPOINT_RE = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.([0-9a-fA-F-]{36}))?\.(parquet|json)$"
)
#: At one version, the kinds that read fewest files first.
_KIND_ORDER = {"v2": 0, "classic": 1, "multi-part": 2}


@dataclass(frozen=True)
class Checkpoint:
    """One complete checkpoint of the log.

    :param version: the table version it holds.
    :param files: its file names in ``_delta_log`` (the parts of a multi-part one, in order).
    :param kind: ``classic``, ``multi-part`` or ``v2``.
    """

    version: int
    files: tuple[str, ...]
    kind: str


def complete_checkpoints(names: Iterable[str]) -> list[Checkpoint]:
    """The complete checkpoints among a log folder's files, newest first (at one version, a v2 or classic
    one before a multi-part one).

    :param names: the files of ``_delta_log``, as names or as paths (the name is the last part).
    """
    parts: dict[tuple[int, int], dict[int, str]] = {}
    found: list[Checkpoint] = []
    for path in names:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        match = _CHECKPOINT_RE.match(name)
        if match is None:
            continue
        version_text, part, total, uuid, suffix = match.groups()
        version = int(version_text)
        if part is not None:
            if suffix == "parquet":
                parts.setdefault((version, int(total)), {})[int(part)] = name
        elif uuid is not None:
            found.append(Checkpoint(version, (name,), "v2"))
        elif suffix == "parquet":
            found.append(Checkpoint(version, (name,), "classic"))
    for (version, total), named in parts.items():
        if total > 0 and sorted(named) == list(range(1, total + 1)):
            found.append(Checkpoint(version, tuple(named[i] for i in range(1, total + 1)), "multi-part"))
    return sorted(found, key=lambda c: (-c.version, _KIND_ORDER[c.kind]))


def newest_complete_checkpoint(names: Iterable[str], latest: int) -> int | None:
    """The version of the newest complete checkpoint at or below ``latest``, or None.

    :param names: the files of ``_delta_log``, as names or as paths.
    :param latest: the table's latest version.
    """
    return next((c.version for c in complete_checkpoints(names) if c.version <= latest), None)
