"""The log reader on a checkpoint of many row groups: only the row group holding its non-file actions decoded.

    .venv/bin/python bench/checkpoint_row_groups.py [--files 100000] [--row-group-rows 10000] [--rounds 31]

A big table's checkpoint has several row groups (delta-spark's are about 128 MB; delta-rs's a million rows),
and its few non-file actions (``protocol``, ``metaData``, ``txn``) sit together in one of them. The reader
decodes only the row groups whose statistics (null counts) say they hold any. This bench builds a table
whose checkpoint lists ``--files`` files, rewrites the checkpoint in row groups of ``--row-group-rows`` rows
(the actions last, where delta-rs writes them), and times, alternating in every round, the reader's log read
of a new write (a txn identity looked up) as it is and with the statistics ignored (every row group decoded),
after checking the two give the same answer. No JVM.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from _common import median, now
from scale import files_table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--row-group-rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()

    from airflow_provider_deltacc.contract.table import Table
    from airflow_provider_deltacc.delta_log import checkpoint
    from airflow_provider_deltacc.delta_log.log_reader import read_log_state

    with tempfile.TemporaryDirectory() as folder:
        table = files_table(Path(folder) / "t", args.files)
        [path] = (Path(table) / "_delta_log").glob("*.checkpoint.parquet")
        pq.write_table(pq.read_table(path), path, row_group_size=args.row_group_rows)
        groups = pq.ParquetFile(path).metadata.num_row_groups
        by_statistics = checkpoint._row_groups_holding
        modes = {
            "by statistics": by_statistics,
            "every row group": lambda metadata, columns: {
                column: (list(range(metadata.num_row_groups)), None) for column in columns
            },
        }

        def read(mode: str) -> object:
            checkpoint._row_groups_holding = modes[mode]  # type: ignore[assignment]
            try:
                return read_log_state(Table(table), app_ids=["bench/new-write"])
            finally:
                checkpoint._row_groups_holding = by_statistics

        answers = {mode: read(mode) for mode in modes}
        assert answers["by statistics"] == answers["every row group"], answers
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for round_ in range(args.rounds):
            for mode in list(modes) if round_ % 2 == 0 else list(reversed(modes)):
                began = now()
                read(mode)
                times[mode].append(now() - began)

    ms = {mode: median(times[mode]) * 1000 for mode in modes}
    print(f"a checkpoint of {args.files:,} files in {groups} row groups, median of {args.rounds} rounds:")
    for mode in modes:
        print(f"  {mode:16} {ms[mode]:7.1f} ms")
    print(f"  by statistics against every row group: {ms['by statistics'] / ms['every row group']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
