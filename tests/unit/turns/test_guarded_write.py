"""guarded_write: the storage guard, the writer's lease and its turns, in one Airflow-free context manager."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.contract.exceptions import ExclusiveLeaseUnavailable, UnguardedUnsafeWrite
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.contract.storage_safety import StorageSafety
from airflow_provider_deltacc.delta_log.fast_path import LogAnswer
from airflow_provider_deltacc.leases import LeaseStore, SqliteLeaseStore
from airflow_provider_deltacc.turns import WriteGuard, guarded_write
from tests.unit.leases.helpers import grant

pytestmark = pytest.mark.unit

TABLE = "sales.orders"  # a catalog name: nothing is read with delta-rs
SPEC = parse_spec(
    {
        "operation": "merge",
        "table": TABLE,
        "source": {"kind": "table", "name": "db.staging"},
        "options": {"keys": ["id"]},
    }
)
SAFE = StorageSafety(TABLE, "catalog", "spark", True, "a catalog table")
UNSAFE = StorageSafety(TABLE, "s3a", "spark", False, "S3 cannot exclude writers", "spark.delta.logStore")


class Opener:
    """Opens one SQLite store and counts how often it was asked to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.opened = 0

    @contextmanager
    def __call__(self) -> Iterator[LeaseStore]:
        self.opened += 1
        store = SqliteLeaseStore(self.path)
        try:
            yield store
        finally:
            store.close()

    def active(self) -> list[Any]:
        with SqliteLeaseStore(self.path) as store:
            return store.active(TABLE)


@pytest.fixture
def opener(tmp_path: Path) -> Opener:
    return Opener(tmp_path / "leases.db")


def _guard(**kwargs: Any) -> WriteGuard:
    return WriteGuard(holder="ingest.merge[-1]/run", ttl_s=60.0, **kwargs)


def test_a_write_holds_its_lease_while_the_block_runs_and_releases_it_also_on_failure(opener: Opener) -> None:
    with guarded_write(SPEC, _guard(), verdict=SAFE, open_store=opener) as write:
        assert write.spec == SPEC and write.turns is None  # no turn wait: no turns
        held = opener.active()
        assert [(lease.op_kind, lease.holder) for lease in held] == [(OpKind.MERGE, "ingest.merge[-1]/run")]
    assert opener.active() == []
    with (
        pytest.raises(RuntimeError, match="job failed"),
        guarded_write(SPEC, _guard(), verdict=SAFE, open_store=opener),
    ):
        raise RuntimeError("job failed")
    assert opener.active() == []


def test_with_a_turn_wait_the_writer_gets_its_turns_and_waits_for_them_before_a_remote_job(
    opener: Opener,
) -> None:
    calls: list[Any] = []

    def run_job(spec: dict[str, Any], *, turns: Any) -> dict[str, Any]:
        calls.append(turns)
        return {"status": "committed"}

    with guarded_write(SPEC, _guard(turn_wait_timeout_s=5.0), verdict=SAFE, open_store=opener) as write:
        assert write.turns is not None
        assert write.run(run_job, loop_takes_turns=True) == {"status": "committed"}
        report = write.run(run_job, loop_takes_turns=False)  # nobody ahead: the first turn is free
    assert calls == [write.turns, None]
    assert report["first_turn_wait_s"] == pytest.approx(0.0, abs=1.0)


def test_a_write_the_log_answers_takes_no_lease_and_runs_nothing(opener: Opener) -> None:
    answer = {"status": "skipped_duplicate"}
    with guarded_write(
        SPEC, _guard(), verdict=SAFE, open_store=opener, consult_log=lambda s: LogAnswer(report=answer)
    ) as write:
        assert write.run(lambda spec, turns: pytest.fail("the job ran"), loop_takes_turns=True) is answer
    assert opener.opened == 0


def test_unsafe_storage_without_a_lease_is_refused_before_anything_is_opened(opener: Opener) -> None:
    with (
        pytest.raises(UnguardedUnsafeWrite, match=r"use_write_lease=False.*keep use_write_lease=True"),
        guarded_write(SPEC, _guard(use_write_lease=False), verdict=UNSAFE, open_store=opener),
    ):
        pytest.fail("the write ran")
    assert opener.opened == 0


def test_unsafe_storage_takes_the_table_alone_or_fails(opener: Opener) -> None:
    with guarded_write(SPEC, _guard(), verdict=UNSAFE, open_store=opener) as write:
        assert write.spec.storage_guard == "exclusive_lease"
        assert [lease.partitions for lease in opener.active()] == [None]
    with SqliteLeaseStore(opener.path) as store:
        grant(store, TABLE, OpKind.BLIND_APPEND, holder="another-writer")
    with (
        pytest.raises(ExclusiveLeaseUnavailable, match="another-writer"),
        guarded_write(SPEC, _guard(unsafe_storage_wait_timeout_s=0.2), verdict=UNSAFE, open_store=opener),
    ):
        pytest.fail("the write ran beside another writer")


def test_the_override_marks_the_spec_and_takes_an_ordinary_lease(opener: Opener) -> None:
    with SqliteLeaseStore(opener.path) as store:
        grant(store, TABLE, OpKind.BLIND_APPEND, holder="another-writer")
    with guarded_write(SPEC, _guard(allow_unsafe=True), verdict=UNSAFE, open_store=opener) as write:
        assert write.spec.storage_guard == "override"
        assert len(opener.active()) == 2


def test_an_unreachable_store_never_fails_the_write() -> None:
    def broken() -> LeaseStore:
        raise OSError("store is down")

    with guarded_write(SPEC, _guard(turn_wait_timeout_s=5.0), verdict=SAFE, open_store=broken) as write:
        assert write.turns is None and write.spec == SPEC


def test_guarded_write_imports_no_airflow() -> None:
    code = (
        "import json, sys\nimport airflow_provider_deltacc.turns.guarded\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    assert not [name for name in loaded if name.split(".")[0] == "airflow"]
