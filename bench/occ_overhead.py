"""How much the OCC commit loop adds to a MERGE: the same MERGE, interleaved, three ways.

1. raw: a plain delta-spark ``DeltaTable.merge(...).execute()``;
2. loop: that same callable run inside ``run_commit_loop`` (classification, policy, report);
3. job: the full engine path ``spark_job.run_job`` (spec validation, partition pinning, exactly-once
   identity check and commit tagging, then the loop).

Prints the median of loop/raw (goal <= 1.03) and job/raw, each from pairs measured side by side.
"""

from __future__ import annotations

import argparse
import tempfile

from _common import SCHEMA, create_table, median, merge_rows, now, session

from airflow_provider_deltacc.contract.commit_retry import CommitRetryPolicy
from airflow_provider_deltacc.contract.operations import OperationClass
from airflow_provider_deltacc.occ import WorkResult, run_commit_loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    from delta.tables import DeltaTable

    from airflow_provider_deltacc.spark_job.main import run_job

    spark = session("bench-occ-overhead")
    table = tempfile.mkdtemp(prefix="bench-occ-") + "/t"
    create_table(spark, table, partitions=4)

    def raw_merge(version: int) -> None:
        source = spark.createDataFrame(merge_rows(0, version), SCHEMA)
        (
            DeltaTable.forPath(spark, table)
            .alias("t")
            .merge(source.alias("s"), "t.id = s.id AND t.part = s.part")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    def looped(version: int) -> None:
        def work(attempt: int) -> WorkResult:
            raw_merge(version)
            return WorkResult()

        run_commit_loop(
            work,
            operation="MERGE",
            table=table,
            op_class=OperationClass.READ_MODIFY_WRITE,
            policy=CommitRetryPolicy(),
            owns_txn_identity=False,
        )

    def job(version: int) -> None:
        code, report = run_job(
            {
                "operation": "merge",
                "table": table,
                "source": {"kind": "rows", "rows": merge_rows(0, version), "schema": SCHEMA},
                "options": {"keys": ["id", "part"]},
                "txn": {"app_id": "bench-occ", "version": version},
            },
            spark,
        )
        assert code == 0, report

    for warm in range(2):
        raw_merge(-1 - warm)
        looped(-3 - warm)
    loop_ratios: list[float] = []
    job_ratios: list[float] = []
    version = 0
    for _ in range(args.rounds):
        timings = {}
        # Rotate the order every round so no variant always runs first (JIT, caches, GC).
        variants = [("raw", raw_merge), ("loop", looped), ("job", job)]
        shift = len(loop_ratios) % len(variants)
        for name, fn in variants[shift:] + variants[:shift]:
            version += 1
            start = now()
            fn(version)
            timings[name] = now() - start
        loop_ratios.append(timings["loop"] / timings["raw"])
        job_ratios.append(timings["job"] / timings["raw"])
        raw, loop, full = timings["raw"], timings["loop"], timings["job"]
        print(f"round: raw {raw:.2f}s  loop {loop:.2f}s  job {full:.2f}s", flush=True)
    spark.stop()
    print(f"median loop/raw = {median(loop_ratios):.3f}  (goal <= 1.03)")
    print(
        f"median job/raw  = {median(job_ratios):.3f}  "
        "(full engine path: pinning, exactly-once check, commit tag)"
    )


if __name__ == "__main__":
    main()
