"""Conflict metrics through Airflow's own ``Stats``: they reach StatsD, DogStatsD or OpenTelemetry however the
deployment's ``[metrics]`` section configures them (nothing is sent where it configures none).

Every metric is emitted twice: under a fixed name with tags (``table``, ``operation`` and, for conflicts,
``kind``) for backends that take tags (DogStatsD, OpenTelemetry, StatsD with InfluxDB tags), and under a
per-table name for plain StatsD, which drops tags: ``deltacc.table.<table>.<metric>``. ``<table>`` is the
table's key (:func:`~airflow_provider_deltacc.contract.table_location.table_key`) with every character a
metric name cannot hold replaced by ``_``, cut to its last 40 characters, and followed by ``_`` and the
first 8 hex digits of the key's SHA-1: ``/lake/orders`` is ``lake_orders_e906b2f7``. So a long or unusual
table name never breaks a metric name, and two tables never share one. docs/metrics.md lists them all.

A metric that cannot be sent never fails the task: the error is logged at debug level.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.contract.table_location import table_key
from airflow_provider_deltacc.contract.try_times import TryTimes

log = logging.getLogger(__name__)

PREFIX = "deltacc"
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_READABLE_CHARS = 40


def table_metric_name(table: str) -> str:
    """The table's part of a per-table metric name (see the module docstring).

    :param table: the table in any spelling.
    """
    key = table_key(Table(table))
    readable = _NAME_CHARS.sub("_", key).strip("_")[-_READABLE_CHARS:].strip("_") or "table"
    return f"{readable}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def emit_try_metrics(
    table: str,
    operation: str,
    report: Mapping[str, Any],
    *,
    airflow_decision: str | None = None,
    infrastructure: bool = False,
) -> None:
    """Emit the metrics of one finished try of a writer or maintenance task.

    :param table: the task's table.
    :param operation: the operation, e.g. ``merge``.
    :param report: this try's commit report (a failed try's report when it failed).
    :param airflow_decision: ``retry`` or ``fail`` when the try failed and the retry policy decided.
    :param infrastructure: the try failed for infrastructure (Spark, the lease store), not a conflict.
    """
    try:
        _Emitter(table, operation).try_metrics(report, airflow_decision, infrastructure)
    except Exception as exc:  # a metrics backend must never fail a write
        log.debug("could not emit Delta metrics for %s: %s", table, exc)


def record_gate(table: str, operation: str, *, waited_s: float, outcome: str) -> None:
    """Emit how long maintenance waited at the gate, and how the wait ended.

    :param table: the task's table.
    :param operation: ``optimize`` or ``vacuum``.
    :param waited_s: seconds from the first question to the gate until it said go (or the wait ended).
    :param outcome: ``go``, ``timeout`` or ``refused``.
    """
    try:
        emitter = _Emitter(table, operation)
        emitter.timing("gate_wait", waited_s, outcome=outcome)
        emitter.incr(f"gate.{outcome}")
    except Exception as exc:
        log.debug("could not emit Delta gate metrics for %s: %s", table, exc)


def record_live_leases(table: str, live: int) -> None:
    """Emit how many live leases the table has, right after a lease on it was granted or released.

    :param table: the table.
    :param live: its live leases (every holder, every kind) at that moment.
    """
    try:
        _Emitter(table, "lease").gauge("leases.live", live)
    except Exception as exc:
        log.debug("could not emit the live leases of %s: %s", table, exc)


def count_live_leases(store: Any, table: str) -> None:
    """Send the table's live leases as read from the store now (a lease observer, see
    :data:`airflow_provider_deltacc.leases.heartbeat.LEASE_OBSERVER`).

    :param store: the lease store.
    :param table: the table whose lease changed.
    """
    try:
        live = len(store.active(table))
    except Exception as exc:
        log.debug("could not count the live leases on %s: %s", table, exc)
        return
    record_live_leases(table, live)


class _Emitter:
    def __init__(self, table: str, operation: str) -> None:
        from airflow.sdk.observability.stats import Stats

        self.stats = Stats
        self.tags = {"table": table_key(Table(table)), "operation": operation.lower()}
        self.per_table = f"{PREFIX}.table.{table_metric_name(table)}"

    def incr(self, metric: str, count: int = 1, **tags: str) -> None:
        if count <= 0:
            return
        self.stats.incr(f"{PREFIX}.{metric}", count, tags={**self.tags, **tags})
        self.stats.incr(f"{self.per_table}.{metric}", count)

    def gauge(self, metric: str, value: float) -> None:
        self.stats.gauge(f"{PREFIX}.{metric}", value, tags={"table": self.tags["table"]})
        self.stats.gauge(f"{self.per_table}.{metric}", value)

    def timing(self, metric: str, seconds: float, **tags: str) -> None:
        milliseconds = max(0.0, float(seconds)) * 1000.0
        self.stats.timing(f"{PREFIX}.{metric}", milliseconds, tags={**self.tags, **tags})
        self.stats.timing(f"{self.per_table}.{metric}", milliseconds)

    def try_metrics(self, report: Mapping[str, Any], decision: str | None, infrastructure: bool) -> None:
        attempts = [a for a in report.get("attempts") or [] if isinstance(a, Mapping)]
        status = str(report.get("status") or "")
        metrics = report.get("metrics") if isinstance(report.get("metrics"), Mapping) else {}
        if report.get("skipped_duplicate") or status == "skipped_duplicate":
            self.incr("duplicate_skips")
        elif status == "committed" and not (metrics or {}).get("noop"):
            self.incr("commits")
        for attempt in attempts:
            conflict = attempt.get("conflict")
            if isinstance(conflict, Mapping):
                kind = str(conflict.get("kind") or "unknown").lower()
                self.incr("conflicts", kind=kind)
                self.incr(f"conflicts.{_NAME_CHARS.sub('_', kind)}")
        self.incr("in_job_retries", max(0, len(attempts) - 1))
        times = TryTimes.of(report)
        if times.wasted_s > 0:
            self.timing("wasted", times.wasted_s)
        if times.waited_s > 0:
            self.timing("turn_wait", times.waited_s)
        if decision == "retry":
            self.incr("airflow_retries")
        elif decision == "fail":
            self.incr("airflow_failures")
        if infrastructure:
            self.incr("infrastructure_failures")
