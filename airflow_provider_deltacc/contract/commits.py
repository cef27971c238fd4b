"""The commits of a job in the Delta log, read without Spark: their ``userMetadata`` tags and the
idempotent-write identities (``txn`` actions) they record.

Every attempt's commits carry ``deltacc:<token>`` in ``userMetadata``; a job with a run token (the spec's
``outcome.run_token``) prefixes every attempt's token with it, ``deltacc:<run token>:<attempt>``, so whoever
submitted the job finds that run's commits in the log without the driver's report (:func:`run_tag_prefix`).
Plain Python, for the worker's fast path and outcome recovery and the Spark job (``engine.commits``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

TAG_PREFIX = "deltacc:"
#: How many commits are read back to find the commit of a skipped duplicate.
TXN_SCAN_VERSIONS = 1000


def run_tag_prefix(run_token: str) -> str:
    """The start of the ``userMetadata`` of every commit a job with ``run_token`` makes.

    :param run_token: the spec's ``outcome.run_token``.
    """
    return f"{TAG_PREFIX}{run_token}:"


def metric_value(text: Any) -> Any:
    """An ``operationMetrics`` value (Delta writes them as strings) as the number it spells, if it does."""
    if not isinstance(text, str):
        return text
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def scan_for_txn_commit(
    read_commit: Callable[[int], str | None],
    app_id: str,
    txn_version: int,
    latest: int,
    max_versions: int = TXN_SCAN_VERSIONS,
) -> int | None:
    """Return the newest version, from ``latest`` back, whose commit file records ``(app_id, txn_version)``.

    At most ``max_versions`` commit files are read; the scan stops at the first one that is gone (removed by
    log clean-up, or not backfilled yet).

    :param read_commit: the text of ``_delta_log/<version>.json``, or None when that file does not exist.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    :param latest: the newest table version to consider.
    :param max_versions: the most commit files to read.
    """
    for version in range(latest, max(-1, latest - max_versions), -1):
        text = read_commit(version)
        if text is None:
            break
        if records_txn(text, app_id, txn_version):
            return version
    return None


def records_txn(commit_json: str, app_id: str, txn_version: int) -> bool:
    """True when a commit file's :func:`txn_actions` record ``(app_id, txn_version)``.

    :param commit_json: the file's text.
    :param app_id: the txn app id.
    :param txn_version: the txn version.
    """
    return any(t.get("appId") == app_id and t.get("version") == txn_version for t in txn_actions(commit_json))


def txn_actions(commit_json: str) -> Iterator[dict[str, Any]]:
    """A commit file's ``txn`` actions; only lines holding ``"txn"`` are parsed.

    :param commit_json: the file's text.
    """
    text, end = commit_json + "\n", 0
    while (at := text.find('"txn"', end)) >= 0:
        end = text.find("\n", at)
        txn = json.loads(text[text.rfind("\n", 0, at) + 1 : end]).get("txn")
        if isinstance(txn, dict):
            yield txn
