"""Known-conflicting and known-safe pairs for the conflict advisor (``deltacc-advisor dags/``).

Every pair of tasks has a table of its own and no dependency between them, so in one run they can run at
the same time; the advisor's verdict for each pair is noted below, and the integration test
``tests/integration/advisor`` runs each pair concurrently on real Delta tables and checks that verdict.

===========================  =========================================================================
table ``advisor_<name>``     pair and verdict
===========================  =========================================================================
``unpinned``                 MERGE without partition pin x append into date=2026-11-01: **will**
``pinned``                   MERGE pinned to date=2026-11-01 x append into date=2026-11-02: **cannot**
``same_partition``           UPDATE x DELETE of date=2026-11-01: **will**
``disjoint``                 UPDATE of date=2026-11-01 x DELETE of date=2026-11-02: **cannot**
``optimize``                 OPTIMIZE of the whole table x UPDATE of date=2026-11-02: **can** (only when
                             OPTIMIZE finds files to compact there)
``schema``                   ALTER TABLE ADD COLUMNS x blind append: **will**
``appends``                  two blind appends: **cannot**
``mapped``                   the instances of one mapped MERGE without pin: **will**
``vacuum``                   VACUUM x blind append: **hazard** (no conflict exception; retention)
===========================  =========================================================================

Environment: ``DELTACC_EXAMPLE_ROOT`` and ``DELTACC_EXECUTION_MODE``, as for the other examples.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import DAG

from airflow_provider_deltacc.exceptions import DeltaConflictWarning
from airflow_provider_deltacc.operators import (
    DeltaAppendOperator,
    DeltaDeleteOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaSqlOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)

EXAMPLE_ROOT = os.environ.get("DELTACC_EXAMPLE_ROOT") or str(Path(tempfile.gettempdir()) / "deltacc-examples")
EXECUTION_MODE = os.environ.get("DELTACC_EXECUTION_MODE", "spark_submit")
SCHEMA = "id INT, date STRING, v STRING"
DAY1, DAY2 = "2026-11-01", "2026-11-02"


def table(name: str) -> str:
    """The example table of one pair."""
    return f"{EXAMPLE_ROOT}/tables/advisor_{name}"


def rows(day: str, ids: list[int], value: str) -> dict[str, Any]:
    """An inline source of ``ids`` on ``day``."""
    return {"kind": "rows", "rows": [[i, day, value] for i in ids], "schema": SCHEMA}


with DAG(
    dag_id="example_deltacc_advisor_pairs",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # one run at a time: only the pairs inside a run matter here
    max_active_tasks=2,  # two Spark jobs at a time (each a driver JVM in spark_submit), in default_pool
    tags=["deltacc", "example", "advisor"],
    default_args={"execution_mode": EXECUTION_MODE},  # conn_id: the mode's default connection
    doc_md=__doc__,
):
    # This conflict is the point of the example: acknowledge the parse-time warning instead of seeing it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeltaConflictWarning)
        DeltaMergeOperator(
            task_id="unpinned_merge",
            table=table("unpinned"),
            source=rows(DAY2, [3], "merged"),
            keys=["id"],
            partition_pin=None,  # reads the whole table: any concurrent append fails it
        )
    DeltaAppendOperator(task_id="append_day1", table=table("unpinned"), source=rows(DAY1, [100], "late"))

    DeltaMergeOperator(
        task_id="pinned_merge_day1",
        table=table("pinned"),
        source=rows(DAY1, [1], "merged"),
        keys=["id", "date"],
        partition_pin=["date"],
    )
    DeltaAppendOperator(task_id="append_day2", table=table("pinned"), source=rows(DAY2, [200], "late"))

    DeltaUpdateOperator(
        task_id="update_day1",
        table=table("same_partition"),
        set_values={"v": "updated"},
        partition_values=[{"date": DAY1}],
    )
    DeltaDeleteOperator(
        task_id="delete_day1", table=table("same_partition"), partition_values=[{"date": DAY1}]
    )

    DeltaUpdateOperator(
        task_id="update_day1_disjoint",
        table=table("disjoint"),
        set_values={"v": "updated"},
        partition_values=[{"date": DAY1}],
    )
    DeltaDeleteOperator(task_id="delete_day2", table=table("disjoint"), partition_values=[{"date": DAY2}])

    DeltaOptimizeOperator(task_id="optimize_all", table=table("optimize"))
    DeltaUpdateOperator(
        task_id="update_day2",
        table=table("optimize"),
        set_values={"v": "updated"},
        partition_values=[{"date": DAY2}],
    )

    DeltaSqlOperator(
        task_id="add_column",
        table=table("schema"),
        statement="ALTER TABLE {table} ADD COLUMNS (note STRING)",
        op_class="schema_changing",
    )
    DeltaAppendOperator(task_id="append_during_alter", table=table("schema"), source=rows(DAY1, [300], "a"))

    DeltaAppendOperator(task_id="append_x", table=table("appends"), source=rows(DAY1, [400], "x"))
    DeltaAppendOperator(task_id="append_y", table=table("appends"), source=rows(DAY1, [500], "y"))

    DeltaMergeOperator.partial(
        task_id="mapped_unpinned_merge", table=table("mapped"), keys=["id"], partition_pin=None
    ).expand(source=[rows(DAY1, [1], "m0"), rows(DAY2, [3], "m1")])

    DeltaVacuumOperator(task_id="vacuum", table=table("vacuum"))
    DeltaAppendOperator(task_id="append_before_vacuum", table=table("vacuum"), source=rows(DAY1, [600], "v"))
