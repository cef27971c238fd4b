"""The log segment of a table's latest snapshot: the newest checkpoint the log reader uses and the commit
files after it, found one of two ways.

* **Forward from ``_last_checkpoint``**: the checkpoint it names (classic, or multi-part: it gives the
  parts), then the commit files after it, read one after the other until the next is not there. No listing
  of ``_delta_log``, whose names grow with the history: at 10,000 commits the listing was the whole of a
  local read, and on object storage it is a request per 1,000 names.

  Why the first missing commit ends the log: Delta creates version ``n + 1`` only once ``n`` exists, and
  its log cleanup deletes whole versions oldest first (a version's commit and checkpoint before the next
  version's). So a commit after the checkpoint that is missing was never written, unless a cleanup got past
  it, and then it deleted the checkpoint's own version first. When no commit follows the checkpoint, its
  own commit file (``n.json``) must still be there for ``n`` to be the newest version (a cleanup may leave
  the version's checksum behind); the checkpoint's files are read later, and raise ``FileNotFoundError``
  when they are gone. A stale ``_last_checkpoint`` (a newer checkpoint exists) only makes more commits to
  read; past :data:`FORWARD_COMMITS` of them the listing is used instead. A log whose files were deleted
  out of version order (by hand) is outside this: Delta's own readers need every commit after their
  checkpoint too.
* **From the listing**, when ``_last_checkpoint`` is not there, does not parse, names a v2 checkpoint (its
  file name does not follow from the version) or one that is gone, or neither a commit after its checkpoint
  nor the checkpoint's own commit is there (the versions around a stale one were cleaned up): the newest
  complete checkpoint of the folder from ``_last_checkpoint``'s version on (the whole folder when it has
  none) and the commits after it, which must all be there.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, NoReturn

from airflow_provider_deltacc.contract.checkpoint_names import Checkpoint, complete_checkpoints
from airflow_provider_deltacc.contract.exceptions import TableNotFoundError, UnsupportedLog
from airflow_provider_deltacc.delta_log.checksum import checksum_name
from airflow_provider_deltacc.delta_log.log_storage import LocalLogFiles, LogFiles

log = logging.getLogger(__name__)

LAST_CHECKPOINT = "_last_checkpoint"
#: The most commit files read forward from the checkpoint ``_last_checkpoint`` names; a writer checkpoints
#: every 10 (delta-spark) or 100 (delta-rs) commits, so more means it is stale and the listing is cheaper.
FORWARD_COMMITS = 250
_COMMIT_SUFFIX = ".json"
_COMMIT_NAME_LENGTH = 20 + len(_COMMIT_SUFFIX)


@dataclass(frozen=True)
class LogSegment:
    """A checkpoint and the commits after it, up to the latest version.

    :param version: the latest version.
    :param checkpoint: the checkpoint, or None (the commits start at version 0).
    :param commits: the bytes of each commit file after the checkpoint, in version order.
    :param checksum_listed: whether the listing holds the version's checksum file; None when not listed.
    """

    version: int
    checkpoint: Checkpoint | None
    commits: tuple[bytes, ...]
    checksum_listed: bool | None = None


def commit_name(version: int) -> str:
    """The file name of commit ``version`` in ``_delta_log``."""
    return f"{version:020d}{_COMMIT_SUFFIX}"


def classic_checkpoint(version: int) -> Checkpoint:
    """The single-file classic checkpoint of ``version`` (``<version>.checkpoint.parquet``)."""
    return Checkpoint(version, (f"{version:020d}.checkpoint.parquet",), "classic")


def forward_segment(files: LogFiles) -> LogSegment | None:
    """The segment from the checkpoint ``_last_checkpoint`` names, without listing the folder; None when it
    does not name one this can find by name, when more than :data:`FORWARD_COMMITS` commits follow it, or
    when no commit follows it and its own commit is gone.

    The checkpoint's files are not looked at: reading them raises ``FileNotFoundError`` when they are gone.

    :param files: the log folder.
    """
    last = _last_checkpoint(files)
    checkpoint = None if last is None else _named_checkpoint(last)
    if checkpoint is None:
        return None
    commits: list[bytes] = []
    while len(commits) <= FORWARD_COMMITS:
        try:
            commits.append(files.read(commit_name(checkpoint.version + len(commits) + 1)))
        except FileNotFoundError:
            if not commits and not files.exists(commit_name(checkpoint.version)):
                return None  # a stale _last_checkpoint whose version and the next were cleaned up
            return LogSegment(checkpoint.version + len(commits), checkpoint, tuple(commits))
    log.debug("over %d commits after %s's checkpoint in %s", FORWARD_COMMITS, LAST_CHECKPOINT, files.location)
    return None


def listed_segment(files: LogFiles) -> LogSegment:
    """The segment from the folder's listing.

    :param files: the log folder.
    :raises UnsupportedLog: when a commit after the checkpoint is missing, or an object store's listing holds
        no commit (it may be this reader's view only).
    :raises TableNotFoundError: when a local folder holds no commit.
    """
    names = files.names()
    last = _last_checkpoint(files) if LAST_CHECKPOINT in names else None
    listing = None
    if last is not None:
        prefix = f"{int(last['version']):020d}"
        listing = _Listing.of([name for name in names if name >= prefix])
        if listing is not None and listing.checkpoint is None:
            listing = None  # the checkpoint it names is gone or incomplete: read the whole listing
    listing = listing or _Listing.of(names)
    if listing is None:
        no_commit(files)
    start = 0 if listing.checkpoint is None else listing.checkpoint.version + 1
    missing = [v for v in range(start, listing.version + 1) if v not in listing.commits]
    if missing:
        raise UnsupportedLog(f"the log lacks commit {missing[0]} before version {listing.version}")
    commits = tuple(files.read(commit_name(v)) for v in range(start, listing.version + 1))
    return LogSegment(listing.version, listing.checkpoint, commits, checksum_name(listing.version) in names)


def no_commit(files: LogFiles) -> NoReturn:
    """Raise for a folder whose listing holds no commit: no table on local disk; on an object store the
    listing may be this reader's view only, and delta-rs has the last word.

    :param files: the log folder.
    """
    if isinstance(files, LocalLogFiles):
        raise TableNotFoundError(f"no Delta table at {files.location}: its _delta_log holds no commit")
    raise UnsupportedLog("the log's listing holds no commit")


def commit_versions(names: list[str]) -> list[int]:
    """The versions of the commit files among a folder's names."""
    return [
        int(name[:20])
        for name in names
        if len(name) == _COMMIT_NAME_LENGTH and name.endswith(_COMMIT_SUFFIX) and name[:20].isdigit()
    ]


@dataclass(frozen=True)
class _Listing:
    version: int
    checkpoint: Checkpoint | None
    commits: frozenset[int]

    @classmethod
    def of(cls, names: list[str]) -> _Listing | None:
        commits = frozenset(commit_versions(names))
        checkpoints = complete_checkpoints(names)
        checkpoint = checkpoints[0] if checkpoints else None
        if not commits and checkpoint is None:
            return None
        return cls(max([*commits, *([checkpoint.version] if checkpoint else [])]), checkpoint, commits)


def _last_checkpoint(files: LogFiles) -> dict[str, Any] | None:
    """``_last_checkpoint``'s content, or None when there is none or it does not parse."""
    try:
        content = json.loads(files.read(LAST_CHECKPOINT))
        int(content["version"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.debug("ignoring an unreadable %s in %s: %r", LAST_CHECKPOINT, files.location, exc)
        return None
    return content if isinstance(content, dict) else None


def _named_checkpoint(last: dict[str, Any]) -> Checkpoint | None:
    """The checkpoint ``_last_checkpoint`` names, when its file names follow from what it says."""
    if "v2Checkpoint" in last:
        return None
    version = int(last["version"])
    parts = last.get("parts")
    if parts is None:
        return classic_checkpoint(version)
    if not isinstance(parts, int) or parts < 2:
        return None
    names = tuple(f"{version:020d}.checkpoint.{i:010d}.{parts:010d}.parquet" for i in range(1, parts + 1))
    return Checkpoint(version, names, "multi-part")
