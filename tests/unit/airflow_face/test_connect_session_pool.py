"""The pool of kept Spark Connect sessions on one machine: a directory per server, a file per session. Only
one process can claim a kept session; a session comes back only when kept; a dead task's session and a
session idle too long are never handed out. The sessions themselves are tested on a real server
(tests/integration/airflow_face/test_connect_session_reuse.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.hooks.connect import SparkConnectRunner
from airflow_provider_deltacc.hooks.connect_sessions import ClaimedSession, SessionPool, SessionStart

pytestmark = pytest.mark.unit

URL = "sc://connect-host:15002/;token=s3cr3t;use_ssl=true"
START = SessionStart(catalog="spark_catalog", database="default", functions=frozenset({"table_changes"}))


def _pool(root: Path, **kwargs: float) -> SessionPool:
    return SessionPool(url=URL, root=root, **kwargs)


def _kept(pool: SessionPool) -> str:
    session_id = str(uuid.uuid4())
    pool.hold(session_id, START)
    pool.keep(session_id)
    return session_id


def test_a_kept_session_is_claimed_once_with_where_it_started(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    assert pool.claim() is None
    session_id = _kept(pool)
    assert pool.claim() == ClaimedSession(session_id, START)
    assert pool.claim() is None  # held now: nobody else gets it
    pool.keep(session_id)
    assert pool.claim() == ClaimedSession(session_id, START)


def test_the_most_recently_kept_session_is_claimed_first(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    older = _kept(pool)
    os.utime(pool.directory / "idle" / older, (time.time() - 60, time.time() - 60))
    newer = _kept(pool)
    claimed = pool.claim()
    assert claimed is not None and claimed.session_id == newer


def test_a_dropped_session_never_comes_back(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    session_id = str(uuid.uuid4())
    pool.hold(session_id, START)
    pool.drop(session_id)
    assert pool.claim() is None
    assert not any((pool.directory / "held").iterdir())


def test_a_session_idle_too_long_is_not_handed_out_and_is_forgotten(tmp_path: Path) -> None:
    pool = _pool(tmp_path, max_idle_s=30.0)
    stale = _kept(pool)
    os.utime(pool.directory / "idle" / stale, (time.time() - 31, time.time() - 31))
    assert pool.claim() is None
    assert not (pool.directory / "idle" / stale).exists()


def test_the_session_of_a_task_that_died_is_forgotten_not_reused(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    session_id = str(uuid.uuid4())
    (pool.directory / "held").mkdir(parents=True)
    (pool.directory / "held" / f"{session_id}@{int(dead.stdout)}").write_text(START.to_json())
    living = str(uuid.uuid4())
    pool.hold(living, START)  # this process's: it stays held
    assert pool.claim() is None
    assert sorted(p.name for p in (pool.directory / "held").iterdir()) == [f"{living}@{os.getpid()}"]


def test_files_that_are_not_kept_sessions_are_ignored(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    (pool.directory / "idle").mkdir(parents=True)
    (pool.directory / "idle" / "not-a-session").write_text("{}")
    unreadable = str(uuid.uuid4())
    (pool.directory / "idle" / unreadable).write_text("not json")
    assert pool.claim() is None
    assert not any((pool.directory / "idle").iterdir())
    assert not any((pool.directory / "held").iterdir())


def test_each_server_and_user_has_a_pool_of_its_own_named_without_the_token(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    other_user = SessionPool(url="sc://connect-host:15002/;token=other;use_ssl=true", root=tmp_path)
    other_server = SessionPool(url="sc://other-host:15002/;token=s3cr3t;use_ssl=true", root=tmp_path)
    _kept(pool)
    assert other_user.claim() is None and other_server.claim() is None
    assert len({pool.directory, other_user.directory, other_server.directory}) == 3
    assert "s3cr3t" not in str(pool.directory)
    assert oct(pool.directory.joinpath("idle").stat().st_mode & 0o777) == oct(0o700)


def _claim_in_a_process(root: str, ready: Any, out: Any) -> None:
    ready.wait()
    claimed = _pool(Path(root)).claim()
    out.put(claimed.session_id if claimed else None)


def test_processes_claiming_at_once_take_one_kept_session_once(tmp_path: Path) -> None:
    pool = _pool(tmp_path)
    session_id = _kept(pool)
    context = multiprocessing.get_context("spawn")
    ready, out = context.Event(), context.Queue()
    processes = [
        context.Process(target=_claim_in_a_process, args=(str(tmp_path), ready, out)) for _ in range(6)
    ]
    for process in processes:
        process.start()
    ready.set()
    results = [out.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert results.count(session_id) == 1 and results.count(None) == 5


@pytest.mark.parametrize("value", ["sometimes", 1, ["false"]])
def test_a_session_reuse_extra_that_is_not_a_boolean_names_the_field(
    monkeypatch: pytest.MonkeyPatch, value: object
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_BAD_REUSE",
        json.dumps({"conn_type": "spark_connect", "host": "h", "port": 1, "extra": {"session_reuse": value}}),
    )
    with pytest.raises(DeltaCCInputError) as raised:
        _ = SparkConnectRunner(conn_id="deltacc_bad_reuse", job_name="j").session_pool
    assert raised.value.field == "conn_id.extra.session_reuse"
    assert "session_reuse=" in str(raised.value) and "true" in str(raised.value)


@pytest.mark.parametrize(("value", "kept"), [(True, True), ("true", True), (False, False), ("False", False)])
def test_session_reuse_is_on_unless_the_extra_turns_it_off(
    monkeypatch: pytest.MonkeyPatch, value: object, kept: bool
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_DELTACC_REUSE",
        json.dumps({"conn_type": "spark_connect", "host": "h", "port": 1, "extra": {"session_reuse": value}}),
    )
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_REUSE_DEFAULT", "spark-connect://h:1")
    assert (SparkConnectRunner(conn_id="deltacc_reuse", job_name="j").session_pool is not None) is kept
    assert SparkConnectRunner(conn_id="deltacc_reuse_default", job_name="j").session_pool is not None


def test_a_pool_directory_that_cannot_be_used_keeps_nothing_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    pool = _pool(blocked)
    session_id = str(uuid.uuid4())
    assert pool.claim() is None
    assert pool.hold(session_id, START) is False
    assert pool.keep(session_id) is False
    assert "cannot be used" in caplog.text and "DELTACC_CONNECT_SESSION_POOL_DIR" in caplog.text
