"""How long the conflict advisor takes on a big DAG: 500 provider tasks over 20 tables, analysed in <= 1 s.

Generates (in memory, seeded) one DAG of ``--tasks`` provider tasks spread over ``--tables`` tables: a mix of
blind appends, MERGEs (unpinned, pinned by keys, pinned on a column), UPDATE/DELETE with and without
partition values, SQL statements, OPTIMIZE and VACUUM, about one in ten a mapped task, each with up to two
random upstream tasks among the earlier ones (so most pairs stay concurrent). Then times
``advisor.analyse([dag])`` ``--rounds`` times (the DAG is built once; building it is Airflow's cost and is
printed apart) and prints the median wall and CPU time, the pairs found, and the ratio of the median wall
time to the 1 s goal (exit 1 when it misses).
"""

from __future__ import annotations

import argparse
import os
import random
import time
import warnings
from datetime import datetime
from typing import Any

from _common import median, now

GOAL_S = 1.0
SCHEMA = "id INT, date STRING, v STRING"
DAYS = [f"2026-11-{d:02d}" for d in range(1, 8)]


def _rows(rng: random.Random) -> dict[str, Any]:
    return {"kind": "rows", "rows": [[rng.randrange(1000), rng.choice(DAYS), "x"]], "schema": SCHEMA}


def _task(rng: random.Random, index: int, table: str) -> Any:
    from airflow_provider_deltacc.operators import (
        DeltaAppendOperator,
        DeltaDeleteOperator,
        DeltaMergeOperator,
        DeltaOptimizeOperator,
        DeltaSqlOperator,
        DeltaUpdateOperator,
        DeltaVacuumOperator,
    )

    task_id = f"t{index:03d}"
    day = [{"date": rng.choice(DAYS)}]
    kind = rng.choice(["append", "append", "merge", "merge", "update", "delete", "sql", "optimize", "vacuum"])
    if rng.random() < 0.1 and kind in ("append", "merge"):
        operator = DeltaAppendOperator if kind == "append" else DeltaMergeOperator
        extra = {"keys": ["id", "date"]} if kind == "merge" else {}
        return operator.partial(task_id=task_id, table=table, **extra).expand(source=[_rows(rng), _rows(rng)])
    if kind == "append":
        return DeltaAppendOperator(task_id=task_id, table=table, source=_rows(rng), partition_by=["date"])
    if kind == "merge":
        pin = rng.choice(["keyed", None, ["date"]])
        return DeltaMergeOperator(
            task_id=task_id, table=table, source=_rows(rng), keys=["id", "date"], partition_pin=pin
        )
    if kind == "update":
        values = day if rng.random() < 0.7 else None
        return DeltaUpdateOperator(
            task_id=task_id, table=table, set_values={"v": "y"}, partition_values=values
        )
    if kind == "delete":
        return DeltaDeleteOperator(task_id=task_id, table=table, partition_values=day)
    if kind == "sql":
        return DeltaSqlOperator(
            task_id=task_id, table=table, statement="UPDATE {table} SET v = 'z' WHERE id = 1"
        )
    if kind == "optimize":
        return DeltaOptimizeOperator(
            task_id=task_id, table=table, partition_values=day if rng.random() < 0.5 else None
        )
    return DeltaVacuumOperator(task_id=task_id, table=table)


def build_dag(tasks: int, tables: int, seed: int) -> Any:
    """The generated DAG (see the module docstring)."""
    from airflow.sdk import DAG

    rng = random.Random(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generated unpinned MERGEs warn at construction, by design
        with DAG(dag_id="bench_advisor", schedule="0 * * * *", start_date=datetime(2026, 1, 1)) as dag:
            built = []
            for index in range(tasks):
                task = _task(rng, index, f"/data/table_{rng.randrange(tables):02d}")
                for upstream in rng.sample(built, k=min(len(built), rng.choice([0, 0, 1, 2]))):
                    upstream >> task
                built.append(task)
    return dag


def _load() -> str:
    try:
        return ", ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args()

    from airflow_provider_deltacc.advisor.analysis import analyse
    from airflow_provider_deltacc.advisor.findings import FindingLevel

    started = now()
    dag = build_dag(args.tasks, args.tables, args.seed)
    built_s = now() - started
    times: list[float] = []
    cpu: list[float] = []
    analysis = None
    for _ in range(args.rounds):
        started, started_cpu = now(), time.process_time()
        analysis = analyse([dag])
        times.append(now() - started)
        cpu.append(time.process_time() - started_cpu)
    assert analysis is not None
    counts = ", ".join(f"{analysis.count(level)} {level.value}" for level in FindingLevel)
    print(f"DAG: {len(analysis.tasks)} provider tasks on {args.tables} tables (built in {built_s:.2f} s)")
    print(f"pairs that can run at the same time: {len(analysis.findings)} ({counts})")
    print(
        f"analyse: median {median(times):.3f} s, min {min(times):.3f} s, max {max(times):.3f} s "
        f"over {args.rounds} rounds (first, with imports: {times[0]:.3f} s)"
    )
    # CPU time says what the analysis costs when other jobs share the cores (wall time then inflates).
    print(f"analyse CPU time: median {median(cpu):.3f} s, min {min(cpu):.3f} s; load average {_load()}")
    ratio = median(times) / GOAL_S
    print(f"median / goal ({GOAL_S:.0f} s) = {ratio:.2f} -> {'OK' if ratio <= 1 else 'MISSES THE GOAL'}")
    raise SystemExit(0 if ratio <= 1 else 1)


if __name__ == "__main__":
    main()
