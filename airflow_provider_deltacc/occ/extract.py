"""Pull the details (table, winning version and operation, partition) out of a conflict message."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from airflow_provider_deltacc.contract.conflict import MESSAGE_LIMIT

# Delta >= 4.1: "a concurrent <op> added data to table <t> committed at version <v>."
_ADDED = re.compile(
    r"a concurrent (?P<op>[^\n]+?) added data to table (?P<table>[^\n]+?) "
    r"committed at version (?P<version>\d+)"
)
# Delta >= 4.1: "a concurrent <op> deleted data from table <t> (committed at version <v>) that ..."
_DELETED = re.compile(
    r"a concurrent (?P<op>[^\n]+?) deleted data from table (?P<table>[^\n]+?) "
    r"\(committed at version (?P<version>\d+)\)"
)
# Delta >= 4.4 names the table in the MetadataChanged message.
_METADATA_TABLE = re.compile(
    r"The metadata of the Delta table (?P<table>[^\n]+?) has been changed by a concurrent update"
)
# >= 4.1: "in the partition [p=v]"; <= 4.0: "added to partition [p=v]" (ConcurrentAppend) and
# "(for example <file> in partition [p=v])" (ConcurrentDeleteRead); "the root of the table" = none.
_PARTITION = re.compile(r"(?:in the partition|to partition|in partition) (?P<partition>\[[^\]\n]*\])")
# <= 4.0 (and MetadataChanged/ProtocolChanged/... in every version): the winner's CommitInfo as JSON.
_CONFLICTING_COMMIT = re.compile(r"Conflicting commit: (?P<json>\{[^\n]*\})")
# Only as the CommitInfo's first field: real messages (delta-spark 3.3, 4.0) often carry no version at all,
# and the winner's operationParameters may hold one of their own (RESTORE's "version").
_JSON_VERSION = re.compile(r'^\{\s*"version"\s*:\s*(\d+)')
_JSON_OPERATION = re.compile(r'"operation"\s*:\s*"([^"\\]+)"')

_STACK_START = re.compile(r"^(?:\s+at \S|\s*JVM stacktrace:|\s*Caused by: |\s*\.\.\. \d+ more)")


@dataclass(frozen=True)
class Details:
    """What a conflict message says beyond its kind."""

    table: str | None = None
    winning_version: int | None = None
    winning_operation: str | None = None
    partition: str | None = None


def extract_details(text: str) -> Details:
    """Read table, winning version, winning operation and partition hint from a Delta conflict message.

    Anything the message does not state is None; delta-rs messages state none of them.

    :param text: the exception message.
    """
    table: str | None = None
    version: int | None = None
    operation: str | None = None
    match = _ADDED.search(text) or _DELETED.search(text)
    if match:
        operation = match.group("op").strip()
        table = match.group("table").strip()
        version = int(match.group("version"))
    else:
        meta = _METADATA_TABLE.search(text)
        if meta:
            table = meta.group("table").strip()
    commit_version, commit_operation = _conflicting_commit(text)
    if version is None:
        version = commit_version
    if operation is None:
        operation = commit_operation
    partition_match = _PARTITION.search(text)
    partition = partition_match.group("partition") if partition_match else None
    return Details(table=table, winning_version=version, winning_operation=operation, partition=partition)


def _conflicting_commit(text: str) -> tuple[int | None, str | None]:
    match = _CONFLICTING_COMMIT.search(text)
    if not match:
        return None, None
    blob = match.group("json")
    try:
        data = json.loads(blob)
    except ValueError:
        # Truncated or non-standard JSON (e.g. a trimmed log line): fall back to the two fields we need.
        version_match = _JSON_VERSION.search(blob)
        operation_match = _JSON_OPERATION.search(blob)
        return (
            int(version_match.group(1)) if version_match else None,
            operation_match.group(1) if operation_match else None,
        )
    if not isinstance(data, dict):
        return None, None
    version = data.get("version")
    operation = data.get("operation")
    return (
        version if isinstance(version, int) and not isinstance(version, bool) else None,
        operation if isinstance(operation, str) and operation else None,
    )


def summarize_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Return the leading lines of a message without stack frames, at most ``limit`` characters.

    :param text: the full message, possibly with a JVM stack trace.
    :param limit: the maximum length of the result.
    """
    kept: list[str] = []
    for line in text.strip().splitlines():
        if _STACK_START.match(line):
            break
        if line.strip():
            kept.append(line.rstrip())
    summary = "\n".join(kept)
    if len(summary) > limit:
        summary = summary[: limit - 3].rstrip() + "..."
    return summary
