"""Calibrate this box for the suite's closing lines: print, as JSON, the time of a fixed pure-Python loop,
of a local Delta Spark session's start and of a fixed local Spark job (a Delta write and an aggregate read).

``scripts/run_suite.py`` runs it once, before the lanes start, so the figures are taken on a quiet box and a
run on a slower box can be read against the budget (``scripts/suite_summary.py`` holds the reference box's
figures). Run it alone: ``.venv/bin/python scripts/calibrate.py``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path


def python_loop_seconds() -> float:
    """The time of a fixed pure-Python loop, best of three."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for n in range(3_000_000):
            total += n % 7
        best = min(best, time.perf_counter() - started)
    return best


def spark_seconds(scratch: Path) -> tuple[float, float]:
    """A local Delta session's start, and a fixed job's time on it (best of two)."""
    from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

    started = time.perf_counter()
    spark = local_delta_session(app_name="deltacc-calibration", warehouse_dir=str(scratch / "warehouse"))
    start_s = time.perf_counter() - started
    best = float("inf")
    try:
        for round_ in range(2):
            started = time.perf_counter()
            path = str(scratch / f"t{round_}")
            spark.range(200_000).selectExpr("id", "id % 7 AS k").write.format("delta").save(path)
            spark.read.format("delta").load(path).groupBy("k").count().collect()
            best = min(best, time.perf_counter() - started)
    finally:
        spark.stop()
    return start_s, best


def main() -> None:
    figures = {"python_loop_s": python_loop_seconds()}
    with tempfile.TemporaryDirectory(prefix="deltacc-calibration-") as scratch:
        figures["spark_start_s"], figures["spark_job_s"] = spark_seconds(Path(scratch))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
