"""Contention demo: the same K overlapping sources, merged two ways side by side.

``direct_merge`` (mapped, K at once)
    every source MERGEs straight into ``contention_direct``. The sources share dates, so the MERGEs read
    the same partitions and conflict (OSS Delta: Serializable); each conflict is classified and retried
    from a fresh snapshot, in the job and then by Airflow: correct, but every retry redoes a whole MERGE.
``staged`` (:func:`~airflow_provider_deltacc.task_groups.staging_append_then_merge`)
    the same sources are blind-appended to staging (appends never conflict with each other), then ONE
    MERGE applies them to ``contention_staged``: no conflict by construction.

``compare`` reads both tables with delta-rs, checks they hold the same rows (latest ``updated_at`` wins in
both), and reports conflicts and wasted seconds per approach from the tasks' ``deltacc_report`` XComs.

Environment: ``DELTACC_EXAMPLE_ROOT``, ``DELTACC_EXECUTION_MODE`` (as for the other examples) and
``DELTACC_EXAMPLE_SOURCES`` (K, default 4, at most 8).
"""

from __future__ import annotations

import os
import tempfile
from datetime import date, datetime
from pathlib import Path
from typing import Any

from airflow.sdk import dag, task

from airflow_provider_deltacc.operators import DeltaAppendOperator, DeltaMergeOperator
from airflow_provider_deltacc.operators.base import REPORT_XCOM_KEY
from airflow_provider_deltacc.task_groups import staging_append_then_merge

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
DIRECT_TABLE = f"{EXAMPLE_ROOT}/tables/contention_direct"
STAGED_TABLE = f"{EXAMPLE_ROOT}/tables/contention_staged"
STAGING_TABLE = f"{EXAMPLE_ROOT}/tables/contention_staging"
SCHEMA = "id BIGINT, date DATE, value STRING, updated_at BIGINT"
KEYS = ["id", "date"]
K = max(1, min(8, int(os.environ.get("DELTACC_EXAMPLE_SOURCES", "4"))))
DAY = date(2026, 11, 20)


def source_rows(s: int) -> list[dict[str, Any]]:
    """Source ``s``: three ids of its own and the shared id 0, all on one date (one contended partition)."""
    own = [{"id": 100 * (s + 1) + i, "date": DAY, "value": f"s{s}", "updated_at": s} for i in range(3)]
    return [*own, {"id": 0, "date": DAY, "value": f"s{s}", "updated_at": s}]


def expected_rows(k: int = K) -> list[dict[str, Any]]:
    """Both tables after a run: every id once, id 0 from the latest source."""
    latest: dict[int, dict[str, Any]] = {}
    for s in range(k):
        for row in source_rows(s):
            if row["id"] not in latest or row["updated_at"] >= latest[row["id"]]["updated_at"]:
                latest[row["id"]] = row
    return sorted(latest.values(), key=lambda r: r["id"])


@dag(
    dag_id="example_deltacc_contention_demo",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # a slow run delays the next one instead of piling up behind it
    max_active_tasks=2,  # two Spark jobs at a time (each a driver JVM in spark_submit), in default_pool
    tags=["deltacc", "example"],
    default_args={"execution_mode": EXECUTION_MODE},  # conn_id: the mode's default connection
    doc_md=__doc__,
)
def example_deltacc_contention_demo() -> None:
    @task
    def sources() -> list[dict[str, Any]]:
        """K inline sources (the rows travel in the job spec: no files to land)."""
        return [
            {
                "kind": "rows",
                "rows": [{**r, "date": r["date"].isoformat()} for r in source_rows(s)],
                "schema": SCHEMA,
            }
            for s in range(K)
        ]

    landed = sources()
    create_direct = DeltaAppendOperator(
        task_id="create_direct",
        table=DIRECT_TABLE,
        source={"kind": "rows", "rows": [], "schema": SCHEMA},
        partition_by=["date"],
        txn_app_id=f"deltacc/create-if-missing/{DIRECT_TABLE}",
        txn_version=1,
    )
    direct = DeltaMergeOperator.partial(
        task_id="direct_merge",
        table=DIRECT_TABLE,
        keys=KEYS,
        dedup_order_by="updated_at",
        when_matched=[
            {"action": "update", "condition": "t.`updated_at` IS NULL OR s.`updated_at` >= t.`updated_at`"}
        ],
        commit_retry={"max_attempts": 8, "min_wait_s": 0.2, "max_wait_s": 5.0},
    ).expand(source=landed)
    create_direct >> direct

    staged = staging_append_then_merge(
        group_id="staged",
        sources=landed,
        staging_table=STAGING_TABLE,
        target_table=STAGED_TABLE,
        schema=SCHEMA,
        keys=KEYS,
        partition_by=["date"],
        dedup_order_by="updated_at",
    )

    @task
    def compare(ti: Any = None) -> dict[str, Any]:
        """Both tables hold the expected rows; conflicts and wasted seconds per approach."""
        from deltalake import DeltaTable

        summary: dict[str, Any] = {}
        for name, table, task_id, indexes in (
            ("direct", DIRECT_TABLE, "direct_merge", list(range(K))),
            ("staged", STAGED_TABLE, "staged.merge_batches", -1),
        ):
            rows = sorted(DeltaTable(table).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
            if rows != expected_rows():
                raise ValueError(f"{table} does not hold the expected rows: {rows}")
            pulled = ti.xcom_pull(task_ids=task_id, key=REPORT_XCOM_KEY, map_indexes=indexes)
            reports = [r for r in (pulled if isinstance(pulled, list) else [pulled]) if r]
            attempts = [a for r in reports for a in r.get("attempts") or []]
            summary[name] = {
                "merges": len(reports),
                "conflicts": sum(1 for a in attempts if a.get("conflict")),
                "wasted_s": round(sum(float(a.get("wasted_s") or 0.0) for a in attempts), 2),
                "rows": len(rows),
            }
        if summary["staged"]["conflicts"]:
            raise ValueError(f"the staging pattern met a conflict: {summary}")
        return summary

    [direct, staged] >> compare()


example_deltacc_contention_demo()
