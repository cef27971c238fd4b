"""The one stdout line the job prints: ``DELTACC_REPORT <json>``."""

from __future__ import annotations

import json
from typing import Any

REPORT_PREFIX = "DELTACC_REPORT "


def format_report_line(report: dict[str, Any]) -> str:
    """Return the report as one line (no newline inside: JSON escapes them).

    :param report: a JSON-safe dict.
    """
    return REPORT_PREFIX + json.dumps(report, separators=(",", ":"), sort_keys=True, default=str)


def parse_report_line(line: str) -> dict[str, Any] | None:
    """Return the report dict of a report line, or None if the line is not one.

    :param line: one line of the job's output.
    """
    text = line.strip()
    if not text.startswith(REPORT_PREFIX.strip()):
        return None
    try:
        data = json.loads(text[len(REPORT_PREFIX.strip()) :])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
