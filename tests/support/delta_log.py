"""A Delta table's commits as its log files hold them (no engine in between), for tests' checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def log_commits(table: str) -> list[dict[str, Any]]:
    """Every commit file of the table's ``_delta_log``, oldest first: ``version``, ``commitInfo``, its
    ``txn`` actions (``appId``, ``version``) and the partition values of the files it ``removed``."""
    commits: list[dict[str, Any]] = []
    for path in sorted((Path(table) / "_delta_log").glob("*.json")):
        actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        commits.append(
            {
                "version": int(path.stem),
                "commitInfo": next((a["commitInfo"] for a in actions if "commitInfo" in a), {}),
                "txn": [a["txn"] for a in actions if "txn" in a],
                "removed": [dict(a["remove"].get("partitionValues") or {}) for a in actions if "remove" in a],
            }
        )
    return commits
