"""Parse time of a DAG file with 50 provider operators against the same DAG with 50 plain operators.

    .venv/bin/python bench/parse.py [--rounds 7] [--tasks 50]

Both files are generated side by side (same shape: 50 tasks in a chain; the provider file uses the Delta
writer operators, the maintenance operators and the table sensor in rotation, the plain file uses
``EmptyOperator``). Each measurement runs in a fresh Python process, which first imports Airflow and the
DagBag (the shared cost, not timed), then times ``DagBag(dag_folder=<file>)``: importing the file and
collecting its DAG, as the DAG processor does. The two variants alternate (interleaved, order flipped every
round) so machine noise hits both alike. A third variant is the provider file with ``emit_asset=False``:
the cost of the automatic asset outlets. Printed: the median per variant, the ratio (goal <= 1.10) and
whether pyspark, py4j or delta was imported while parsing the provider file (it must not be).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("provider", "no_assets", "plain", "spark_submit")
GOAL = 1.10
HEAVY = ("pyspark", "py4j", "delta")

HEADER = """from datetime import datetime
from airflow.sdk import DAG
{imports}

with DAG("{dag_id}", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    previous = None
"""

PROVIDER_IMPORTS = """from airflow_provider_deltacc.operators import (
    DeltaAppendOperator, DeltaDeleteOperator, DeltaMergeOperator, DeltaOptimizeOperator,
    DeltaSqlOperator, DeltaUpdateOperator, DeltaVacuumOperator,
)
from airflow_provider_deltacc.sensors.table_version import DeltaTableVersionSensor"""

PROVIDER_TASKS = [
    'DeltaMergeOperator(task_id="t{i}", table="/lake/t{i}", source="/in/{i}.parquet", keys=["id", "date"])',
    'DeltaAppendOperator(task_id="t{i}", table="/lake/t{i}", source="SELECT * FROM staged_{i}")',
    'DeltaUpdateOperator(task_id="t{i}", table="/lake/t{i}", set_values={{"s": "ok"}}, equals={{"id": {i}}})',
    'DeltaDeleteOperator(task_id="t{i}", table="/lake/t{i}", partition_values=[{{"date": "2026-11-20"}}])',
    'DeltaSqlOperator(task_id="t{i}", table="/lake/t{i}", statement="DELETE FROM {{table}} WHERE id < 0")',
    'DeltaOptimizeOperator(task_id="t{i}", table="/lake/t{i}")',
    'DeltaVacuumOperator(task_id="t{i}", table="/lake/t{i}")',
    'DeltaTableVersionSensor(task_id="t{i}", table="/lake/t{i}", operation="MERGE")',
]

PLAIN_IMPORTS = "from airflow.providers.standard.operators.empty import EmptyOperator"
PLAIN_TASK = 'EmptyOperator(task_id="t{i}")'

# A reference point from the ecosystem: the apache-spark provider's own operator, which also takes ~20
# keyword arguments (each one an attribute that BaseOperator.__setattr__ checks).
SPARK_IMPORTS = "from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator"
SPARK_TASK = 'SparkSubmitOperator(task_id="t{i}", application="/jobs/t{i}.py", conf={{"k": "v"}})'

BODY = """    task = {task}
    if previous is not None:
        previous >> task
    previous = task
"""

PROBE = f"""
import json, sys, time
import airflow, airflow.sdk
from airflow.dag_processing.dagbag import DagBag
path = sys.argv[1]
start = time.perf_counter()
bag = DagBag(dag_folder=path)
elapsed = time.perf_counter() - start
assert not bag.import_errors, bag.import_errors
assert len(next(iter(bag.dags.values())).tasks) == int(sys.argv[2])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
print(json.dumps({{"seconds": elapsed, "heavy": heavy}}))
"""


def write_dag(folder: Path, variant: str, tasks: int) -> Path:
    if variant in ("provider", "no_assets"):
        imports, bodies = PROVIDER_IMPORTS, [PROVIDER_TASKS[i % len(PROVIDER_TASKS)] for i in range(tasks)]
        if variant == "no_assets":  # the same operators without their automatic outlets
            bodies = [b.replace("Operator(", "Operator(emit_asset=False, ", 1) for b in bodies]
    elif variant == "spark_submit":
        imports, bodies = SPARK_IMPORTS, [SPARK_TASK] * tasks
    else:
        imports, bodies = PLAIN_IMPORTS, [PLAIN_TASK] * tasks
    text = HEADER.format(imports=imports, dag_id=f"bench_parse_{variant}")
    text += "".join(BODY.format(task=body.format(i=i)) for i, body in enumerate(bodies))
    path = folder / variant / f"bench_parse_{variant}.py"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def measure(path: Path, tasks: int, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), str(tasks)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7, help="measurements per variant (default 7)")
    parser.add_argument("--tasks", type=int, default=50, help="operators per DAG file (default 50)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="deltacc-bench-parse-") as work:
        folder = Path(work)
        home = folder / "airflow-home"
        home.mkdir()
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        }
        files = {v: write_dag(folder, v, args.tasks) for v in VARIANTS}
        # A deployed provider has bytecode (pip/uv compile at install); this repository is installed in
        # editable mode, so compile it here rather than timing the compiler in every parse.
        compileall.compile_dir(str(ROOT / "airflow_provider_deltacc"), quiet=1)
        measure(files["plain"], args.tasks, env)  # warm the OS file cache; not counted
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        heavy: set[str] = set()
        for round_ in range(args.rounds):
            shift = round_ % len(VARIANTS)
            for variant in VARIANTS[shift:] + VARIANTS[:shift]:
                result = measure(files[variant], args.tasks, env)
                times[variant].append(float(result["seconds"]))  # type: ignore[arg-type]
                if variant == "provider":
                    heavy.update(result["heavy"])  # type: ignore[arg-type]

    provider, plain = statistics.median(times["provider"]), statistics.median(times["plain"])
    ratio = provider / plain
    print(f"DAG file parse time, {args.tasks} operators, {args.rounds} fresh processes each (interleaved)")
    print(f"{'variant':<12} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for variant in VARIANTS:
        values = times[variant]
        print(
            f"{variant:<12} {statistics.median(values) * 1000:>10.1f} {min(values) * 1000:>8.1f} "
            f"{max(values) * 1000:>8.1f}"
        )
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"ratio provider/plain: {ratio:.3f} ({verdict} the goal <= {GOAL:.2f})")
    spark = statistics.median(times["spark_submit"])
    print(f"ratio spark_submit/plain: {spark / plain:.3f} (apache-spark's own operator, for reference)")
    print(f"ratio provider/spark_submit: {provider / spark:.3f}")
    no_assets = statistics.median(times["no_assets"])
    print(f"ratio provider/no_assets: {provider / no_assets:.3f} (the cost of the automatic asset outlets)")
    print(f"heavy modules imported while parsing the provider DAG: {sorted(heavy) or 'none'}")
    return 0 if not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
