"""A checkpoint's non-file actions decoded from their pages' level runs, against pyarrow, as the files grow.

    .venv/bin/python bench/checkpoint_pages.py [--files 1000,100000] [--rounds 31]

The reader decodes a checkpoint's ``protocol``, ``metaData`` and ``txn`` fields from their pages
(``delta_log/sparse_rows.py``): a run of file rows, null in those columns, is skipped in one step. pyarrow,
which the reader used before and still falls back to, decodes each field for every row. This bench builds
``scale.py``'s tables whose third commit adds ``--files`` files (delta-rs's checkpoint after it) and times,
alternating in every round, the two decodings of the same row group (the footer already read), after
checking that they give the same rows. Ratios: each decoding's largest table against its smallest, and the
pages against pyarrow. No JVM.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from _common import median, now
from scale import files_table

COLUMNS = ("protocol", "metaData", "txn")


def decoders(path: Path) -> dict[str, Any]:
    """The two decodings of one checkpoint's non-file actions, each a call."""
    from airflow_provider_deltacc.delta_log import checkpoint
    from airflow_provider_deltacc.delta_log.sparse_rows import sparse_struct_rows

    source = pa.OSFile(str(path), "rb")
    parquet = pq.ParquetFile(source)
    fields = {column: list(checkpoint.STATE_FIELDS[column]) for column in COLUMNS}
    paths = [f"{column}.{name}" for column, names in fields.items() for name in names]
    return {
        "pages": lambda: sparse_struct_rows(parquet, source, [0], fields),
        "pyarrow": lambda: checkpoint._decoded_rows(parquet, [0], paths),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    sizes = [int(n) for n in args.files.split(",")]

    with tempfile.TemporaryDirectory() as folder:
        calls = {}
        for files in sizes:
            table = files_table(Path(folder) / f"t{files}", files)
            [path] = (Path(table) / "_delta_log").glob("*.checkpoint.parquet")
            calls[files] = decoders(path)
            answers = {mode: call() for mode, call in calls[files].items()}
            assert answers["pages"] == answers["pyarrow"] and answers["pages"]["metaData"], answers
        times: dict[tuple[int, str], list[float]] = {}
        for round_ in range(args.rounds):
            for files in sizes:
                modes = ["pages", "pyarrow"] if round_ % 2 == 0 else ["pyarrow", "pages"]
                for mode in modes:
                    began = now()
                    calls[files][mode]()
                    times.setdefault((files, mode), []).append(now() - began)

    ms = {key: median(values) * 1000 for key, values in times.items()}
    print(f"the non-file actions of a checkpoint, median of {args.rounds} rounds, ms (same rows both ways):")
    for files in sizes:
        pages, arrow = ms[(files, "pages")], ms[(files, "pyarrow")]
        ratio = pages / arrow
        print(f"  {files:>9,} files   pages {pages:6.2f}   pyarrow {arrow:6.2f}   pages/pyarrow {ratio:.2f}x")
    low, high = sizes[0], sizes[-1]
    for mode in ("pages", "pyarrow"):
        print(f"  {mode:8} {high:,} files against {low:,}: {ms[(high, mode)] / ms[(low, mode)]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
