"""Where a table's files are on this machine, and an attempt's commit read from its commit file's lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.table import local_path
from airflow_provider_deltacc.engine.backend_connect import _local_commit_lines, _tagged_entry

pytestmark = pytest.mark.unit

COMMIT = [
    '{"add":{"path":"part-0.parquet"}}',
    '{"commitInfo":{"operation":"MERGE","userMetadata":"tag-1","operationMetrics":{"numTargetRowsInserted":"2"}}}',
]


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("/data/orders", "/data/orders"),
        ("file:/data/orders", "/data/orders"),
        ("file:///data/orders", "/data/orders"),
        ("file://localhost/data/orders", "/data/orders"),
        ("file://host-b/data/orders", None),
        ("s3a://lake/orders", None),
        ("hdfs://nn/orders", None),
        ("relative/orders", None),
    ],
)
def test_only_absolute_paths_and_local_file_uris_are_on_this_machine(location: str, path: str | None) -> None:
    assert local_path(location) == (None if path is None else Path(path))


def test_the_commit_is_the_attempts_only_when_its_commit_info_carries_the_tag() -> None:
    assert _tagged_entry(COMMIT, 4, "tag-1") == (4, "MERGE", {"numTargetRowsInserted": "2"})
    assert _tagged_entry(COMMIT, 4, "tag-2") is None
    assert _tagged_entry(COMMIT[:1], 4, "tag-1") is None
    assert _tagged_entry([], 4, "tag-1") is None


def test_a_commit_file_is_read_from_this_machine_or_not_at_all(tmp_path: Path) -> None:
    log = tmp_path / "orders" / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{4:020d}.json").write_text("\n".join(COMMIT) + "\n", encoding="utf-8")
    assert _local_commit_lines(str(tmp_path / "orders"), 4) == COMMIT
    assert _local_commit_lines(f"file://{tmp_path}/orders", 4) == COMMIT
    assert _local_commit_lines(str(tmp_path / "orders"), 5) == []  # not there (yet, or another machine's)
    assert _local_commit_lines("s3a://lake/orders", 4) == []
