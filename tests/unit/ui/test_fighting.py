"""Who is fighting over a table: its commits and who wrote each (an Airflow task, by the provider's commit tag
or a report's version, or a writer outside Airflow), the commits that made writers lose, writers outside
Airflow, and the live leases in grant order; from hand-made history rows, from a real Delta table written with
delta-rs, and through the plugin's route behind Airflow's authentication with a real metadata DB."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from airflow_provider_deltacc.contract.commits import TAG_PREFIX
from airflow_provider_deltacc.contract.conflict import ConflictKind
from airflow_provider_deltacc.contract.exceptions import ViewInputError
from airflow_provider_deltacc.contract.op_kinds import OpKind
from airflow_provider_deltacc.leases.lease import Lease
from airflow_provider_deltacc.ui import fighting
from airflow_provider_deltacc.ui.fighting import (
    LeaseView,
    TableView,
    TimeRange,
    Winners,
    conflict_winners,
    lease_rows,
    parse_time_range,
    read_log,
    redacted,
    short_parameters,
    table_commits,
)
from airflow_provider_deltacc.ui.fighting_page import fighting_page
from tests.support.commit_reports import committed_try, final_report, lost_try
from tests.support.ui_auth import app_client, bearer
from tests.support.ui_metadata import TaskRow

pytestmark = [pytest.mark.unit, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ORDERS = "/lake/orders"
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
TAG = f"{TAG_PREFIX}run-1:1"


def _text(html: str) -> str:
    """The page's visible text, tags dropped and whitespace collapsed."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def _ids(report: dict[str, Any], dag_id: str, task_id: str, run_id: str = "run_1") -> dict[str, Any]:
    return {**report, "dag_id": dag_id, "task_id": task_id, "run_id": run_id, "map_index": -1}


def _committed(table: str, version: int, task_id: str, *, dag_id: str = "ingest") -> dict[str, Any]:
    report = final_report((committed_try(table, started_at=NOW.timestamp() - 600, version=version), None))
    return _ids(report, dag_id, task_id)


def _lost(
    table: str, version: int | None, task_id: str, *, started_at: float | None = None
) -> dict[str, Any]:
    started = NOW.timestamp() - 300 if started_at is None else started_at
    lost = lost_try(table, started_at=started, winning_version=version, kind=ConflictKind.APPEND)
    return _ids(final_report((lost, None)), "ingest", task_id)


def _commit(version: int, *, minutes_ago: float, operation: str = "WRITE", **info: Any) -> dict[str, Any]:
    """A history row as ``DeltaTable.history()`` gives it."""
    when = NOW - timedelta(minutes=minutes_ago)
    return {
        "version": version,
        "timestamp": int(when.timestamp() * 1000),
        "operation": operation,
        "operationParameters": {"mode": "Append"},
        **info,
    }


# -- the time range ---------------------------------------------------------------------------------------


def test_the_range_is_the_last_24_hours_by_default_and_a_date_alone_is_a_whole_day() -> None:
    assert parse_time_range(None, "", now=NOW) == TimeRange(NOW - timedelta(hours=24), NOW)
    day = parse_time_range("2026-11-19", "2026-11-19", now=NOW)
    assert day == TimeRange(datetime(2026, 11, 19, tzinfo=UTC), datetime(2026, 11, 20, tzinfo=UTC))
    hours = parse_time_range("2026-11-19T22:00:00+02:00", "2026-11-20T01:30", now=NOW)
    assert hours == TimeRange(
        datetime(2026, 11, 19, 20, tzinfo=UTC), datetime(2026, 11, 20, 1, 30, tzinfo=UTC)
    )
    assert parse_time_range("2026-11-20T11:00:00Z", None, now=NOW).since == datetime(
        2026, 11, 20, 11, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("since", "until", "message"),
    [
        ("yesterday", None, "since='yesterday': not a date or a time: give an ISO date (2026-11-20)"),
        (None, "2026-13-01", "until='2026-13-01': not a date or a time"),
        ("2026-11-21", "2026-11-20", "since='2026-11-21': not before until='2026-11-20'"),
    ],
    ids=["since", "until", "order"],
)
def test_a_bad_since_or_until_names_the_parameter_its_value_and_the_form_expected(
    since: str | None, until: str | None, message: str
) -> None:
    with pytest.raises(ViewInputError, match=re.escape(message)):
        parse_time_range(since, until, now=NOW)


# -- commits and who wrote them ---------------------------------------------------------------------------


def test_each_commit_says_who_wrote_it_an_airflow_task_or_a_writer_outside_airflow() -> None:
    history = [
        _commit(7, minutes_ago=60 * 30, userMetadata=TAG),  # outside the range
        _commit(8, minutes_ago=50, userMetadata=TAG),
        _commit(9, minutes_ago=40, userMetadata=TAG),
        _commit(
            10,
            minutes_ago=30,
            operation="DELETE",
            engineInfo="Apache-Spark/4.0.0 Delta-Lake/4.0.0",
            userName="alice",
            operationParameters={"predicate": '["(p = a)"]'},
        ),
        _commit(11, minutes_ago=20, engineInfo="delta-rs:py-1.6.6", userMetadata="backfill by hand"),
    ]
    reports = [_committed(ORDERS, 8, "append"), _committed(ORDERS, 11, "failed_append")]
    reports[1]["tries"][0]["status"] = "error"  # a try that did not commit names no version

    commits = table_commits(history, reports, time_range=TimeRange(NOW - timedelta(hours=24), NOW))

    assert [r.version for r in commits.rows] == [11, 10, 9, 8] and not commits.bounded
    by_version = {r.version: r for r in commits.rows}
    assert (by_version[8].writer.kind, by_version[8].writer.label) == ("airflow", "ingest.append")
    assert by_version[8].writer.task == {
        "dag_id": "ingest",
        "run_id": "run_1",
        "task_id": "append",
        "map_index": -1,
    }
    assert (by_version[9].writer.kind, by_version[9].writer.label) == ("airflow", "an Airflow task")
    assert "provider's commit tag" in by_version[9].writer.detail
    spark = by_version[10].writer
    assert (spark.kind, spark.label) == ("outside", "outside Airflow")
    assert spark.detail == "engineInfo=Apache-Spark/4.0.0 Delta-Lake/4.0.0, userName=alice"
    assert by_version[10].parameters == 'predicate=["(p = a)"]'
    assert (
        by_version[11].writer.kind == "outside"
        and "userMetadata=backfill by hand" in by_version[11].writer.detail
    )
    assert [(w.who, w.commits, w.operations) for w in commits.outside] == [
        ("engineInfo=Apache-Spark/4.0.0 Delta-Lake/4.0.0, userName=alice", 1, (("DELETE", 1),)),
        ("engineInfo=delta-rs:py-1.6.6", 1, (("WRITE", 1),)),
    ]


def test_the_commit_list_is_bounded_newest_first_and_says_so() -> None:
    history = [_commit(v, minutes_ago=100 - v) for v in range(6)]
    commits = table_commits(history, [], limit=2)
    assert [r.version for r in commits.rows] == [5, 4]
    assert commits.bounded and commits.in_range == 6
    assert (
        commits.outside[0].commits == 6
    )  # the summary counts every commit of the range, not the listed ones
    view = TableView("/lake/orders", TimeRange(NOW - timedelta(hours=1), NOW), commits=commits)
    assert "The range holds 6 commits: the newest 2 are listed (at most 500)" in _text(fighting_page(view))


def test_short_parameters_keep_one_short_line() -> None:
    assert short_parameters({"mode": "Append", "partitionBy": ["p"]}) == 'mode=Append, partitionBy=["p"]'
    long = short_parameters({"predicate": "x" * 500, "other": "y" * 500}, width=100)
    assert len(long) == 100 and long.endswith("\u2026")
    assert short_parameters(None) == ""


# -- which commits made writers lose -----------------------------------------------------------------------


def test_the_winner_of_every_recorded_conflict_by_version_with_how_many_lost_and_which_tasks() -> None:
    history = [
        _commit(3, minutes_ago=30, userMetadata=TAG),
        _commit(4, minutes_ago=20, operation="OPTIMIZE", engineInfo="delta-rs:py-1.6.6"),
    ]
    long_ago = (NOW - timedelta(days=3)).timestamp()
    reports = [
        _committed(ORDERS, 3, "append"),
        _lost(ORDERS, 3, "merge"),
        _lost(ORDERS, 3, "merge_eu"),
        _lost(ORDERS, 4, "merge"),
        _lost(ORDERS, 2, "merge"),  # a version the log read does not hold: the conflict's operation
        _lost(ORDERS, None, "merge_us"),
        _lost(ORDERS, 4, "merge_old", started_at=long_ago),  # lost before the range
    ]

    found = conflict_winners(reports, history, time_range=TimeRange(NOW - timedelta(hours=24), NOW))

    assert [w.version for w in found.winners] == [4, 3, 2] and found.unnamed == 1
    v4, v3, v2 = found.winners
    assert (v4.losers, v4.tasks, v4.operation) == (1, (("ingest.merge", 1),), "OPTIMIZE")
    assert v4.writer is not None and v4.writer.kind == "outside"
    assert (v3.losers, v3.tasks, v3.kinds) == (
        2,
        (("ingest.merge", 1), ("ingest.merge_eu", 1)),
        (("APPEND", 2),),
    )
    assert v3.writer is not None and v3.writer.label == "ingest.append"
    assert (v2.operation, v2.writer, v2.timestamp) == ("WRITE", None, None)

    everything = conflict_winners(reports, history)
    assert everything.winners[0].losers == 2  # merge_old counts when no range is given
    rows = {r.version: r.losers for r in table_commits(history, reports).rows}
    assert rows == {4: 2, 3: 2}


# -- leases ------------------------------------------------------------------------------------------------


def _lease(n: int, op: OpKind, partitions: list[dict[str, str]] | None = None, holder: str = "") -> Lease:
    granted = NOW - timedelta(seconds=100 - n)
    return Lease(f"lease{n}", ORDERS, holder or f"ingest.t{n}/run_1", op, partitions, granted, granted, 120.0)


def test_live_leases_are_listed_in_grant_order_with_the_writers_each_takes_its_turn_after() -> None:
    leases = [
        _lease(3, OpKind.BLIND_APPEND),
        _lease(1, OpKind.MERGE),
        _lease(2, OpKind.MERGE, [{"date": "2026-11-20"}]),
        _lease(4, OpKind.MERGE),
        _lease(5, OpKind.OPTIMIZE),
    ]
    rows = lease_rows(leases, NOW)
    assert [(r.position, r.lease_id, r.operation) for r in rows] == [
        (1, "lease1", "MERGE"),
        (2, "lease2", "MERGE"),
        (3, "lease3", "BLIND_APPEND"),
        (4, "lease4", "MERGE"),
        (5, "lease5", "OPTIMIZE"),
    ]
    behind = {r.lease_id: r.behind for r in rows}
    # An unpinned MERGE reads every file: whoever writes after it goes after it (a blind append too, at
    # Serializable); maintenance takes no turn, its lease is granted only when nothing it conflicts with runs.
    assert (behind["lease2"], behind["lease3"], behind["lease4"], behind["lease5"]) == (
        (1,),
        (1,),
        (1, 2, 3),
        (),
    )
    assert rows[0].scope == "the whole table" and rows[1].scope == "date=2026-11-20"
    assert (rows[0].granted_s, rows[0].heartbeat_s, rows[0].expires_in_s) == (99.0, 99.0, 21.0)


# -- the page ----------------------------------------------------------------------------------------------


def test_the_page_escapes_every_value_and_shows_what_could_not_be_read() -> None:
    evil = "<script>alert(1)</script>"
    view = TableView(
        f"/lake/{evil}",
        TimeRange(NOW - timedelta(hours=24), NOW),
        log_error=f"OSError: no table at /lake/{evil}",
        leases=LeaseView(
            tuple(lease_rows([_lease(1, OpKind.MERGE, holder=evil)], NOW)), "SqliteLeaseStore('x')"
        ),
        winners=Winners(()),
    )
    html = fighting_page(view)
    assert evil not in html and "&lt;script&gt;" in html
    text = _text(html)
    assert "The Delta log was not read: OSError: no table at" in text
    assert "Unknown: the log was not read." in text and "No recorded conflict lost in this range." in text
    broken = TableView(
        "/lake/orders", view.time_range, leases=LeaseView(error="the lease store cannot be opened")
    )
    assert "the lease store cannot be opened" in _text(fighting_page(broken))


def test_an_error_message_hides_secrets_and_terminal_colours() -> None:
    error = OSError(
        "\x1b[31mGET http://s3 failed\x1b[0m for AWS_SECRET_ACCESS_KEY=hunter2-secret key s3cr3t-value"
    )
    text = redacted(error, ["s3cr3t-value"])
    assert "hunter2-secret" not in text and "s3cr3t-value" not in text and "\x1b" not in text
    assert text.startswith("OSError: GET http://s3 failed")


# -- a real Delta table ------------------------------------------------------------------------------------


def _write(path: Path, rows: int, *, tag: str | None = None, mode: str = "append") -> None:
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake

    data = pa.table({"p": ["a"] * rows, "x": list(range(rows))})
    properties = CommitProperties(custom_metadata={"userMetadata": tag}) if tag else None
    write_deltalake(str(path), data, mode=mode, partition_by=["p"], commit_properties=properties)  # type: ignore[arg-type]


def _real_table(path: Path) -> None:
    """v0 created outside Airflow, v1 and v2 tagged by the provider, v3 a DELETE outside, v4 tagged."""
    from deltalake import DeltaTable

    _write(path, 2)
    _write(path, 1, tag=f"{TAG_PREFIX}run-a:1")
    _write(path, 1, tag=f"{TAG_PREFIX}run-b:1")
    DeltaTable(str(path)).delete("x = 0")
    _write(path, 1, tag=f"{TAG_PREFIX}run-c:2")


def test_a_real_delta_table_attributes_every_commit_and_names_the_winners(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    _real_table(table)
    now = time.time()
    merge = lost_try(
        str(table),
        started_at=now - 5,
        winning_version=3,
        winning_operation="DELETE",
        kind=ConflictKind.DELETE_READ,
    )
    merge_final = final_report(
        (merge, None), (committed_try(str(table), started_at=now - 2, version=4), None)
    )
    reports = [
        _ids(
            final_report((committed_try(f"file://{table}", started_at=now - 9, version=1), None)),
            "ingest",
            "append",
        ),
        _ids(merge_final, "ingest", "merge"),
        _ids(
            final_report((lost_try(str(table), started_at=now - 8, winning_version=1), None)),
            "ingest",
            "merge_eu",
        ),
    ]
    in_range = TimeRange(datetime.fromtimestamp(now - 3600, tz=UTC), datetime.fromtimestamp(now + 60, tz=UTC))

    read = read_log(str(table), None, in_range.since)
    assert read.whole_log and read.covers_range and len(read.rows) == 5
    commits = table_commits(read.rows, reports, time_range=in_range)
    winners = conflict_winners(reports, read.rows, time_range=in_range)

    rows = [(r.version, r.operation, r.writer.kind, r.writer.label, r.losers) for r in commits.rows]
    assert rows == [
        (4, "WRITE", "airflow", "ingest.merge", 0),
        (3, "DELETE", "outside", "outside Airflow", 1),
        (2, "WRITE", "airflow", "an Airflow task", 0),
        (1, "WRITE", "airflow", "ingest.append", 1),
        (0, "WRITE", "outside", "outside Airflow", 0),
    ]
    assert "engineInfo=delta-rs:" in commits.rows[1].writer.detail
    assert commits.rows[1].parameters.startswith("predicate=")
    (outside,) = commits.outside
    assert outside.commits == 2 and dict(outside.operations) == {"DELETE": 1, "WRITE": 1}
    assert [
        (w.version, w.operation, w.tasks, w.writer.label if w.writer else None) for w in winners.winners
    ] == [
        (3, "DELETE", (("ingest.merge", 1),), "outside Airflow"),
        (1, "WRITE", (("ingest.merge_eu", 1),), "ingest.append"),
    ]


def test_the_log_is_read_back_only_as_far_as_the_range_needs_and_the_scan_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "events"
    for _ in range(10):
        _write(table, 1)
    # the first read is 2 x COMMIT_LIMIT commits (patched in the module that reads the log)
    monkeypatch.setattr("airflow_provider_deltacc.ui.fighting.log.COMMIT_LIMIT", 2)
    past, future = datetime(2000, 1, 1, tzinfo=UTC), datetime.now(UTC) + timedelta(hours=1)

    assert [len(read_log(str(table), None, future).rows)] == [4]
    bounded = read_log(str(table), None, past, scan_limit=8)
    assert (len(bounded.rows), bounded.covers_range, bounded.whole_log) == (8, False, False)
    whole = read_log(str(table), None, past)
    assert (len(whole.rows), whole.covers_range, whole.whole_log) == (10, True, True)
    with pytest.raises(ValueError, match="catalog table name"):
        read_log("sales.orders", None, past)
    with pytest.raises(ValueError, match="relative path"):
        read_log("lake/orders", None, past)


# -- the route, behind Airflow's authentication, on a real metadata DB -------------------------------------

MINE, THEIRS, ON_S3 = "ui_fighting_mine", "ui_fighting_theirs", "ui_fighting_s3"
ROWS = {"kind": "rows", "rows": [[1, "a"]], "schema": "id INT, p STRING"}


@pytest.fixture
def client(add_rows: Callable[..., None], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The plugin's app whose ``viewer`` may read ``MINE`` only (reports are added by each test)."""
    return app_client(monkeypatch, viewer_dag=MINE)


@pytest.fixture
def lease_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A SQLite lease store named by ``$DELTACC_LEASE_STORE_URL`` (no ``[deltacc] lease_store_conn_id``)."""
    from airflow_provider_deltacc.leases.sqlite_store import SqliteLeaseStore

    path = tmp_path / "leases.db"
    monkeypatch.delenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", raising=False)
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", f"sqlite:///{path}")
    store = SqliteLeaseStore(path)
    yield store
    store.close()


def _grant(store: Any, table: str, op: OpKind, holder: str) -> None:
    from airflow_provider_deltacc.leases.lease import LeaseRequest

    assert store.try_acquire(LeaseRequest(table, holder, op, None, 300.0), lambda _lease: False).lease


def _report(*tries: dict[str, Any]) -> dict[str, Any]:
    """The final report of a task instance whose tries are ``tries`` (no retry decisions)."""
    return final_report(*((t, None) for t in tries))


def _page(client: Any, headers: dict[str, str], **params: str) -> tuple[int, str]:
    response = client.get("/table", params=params, headers=headers)
    return response.status_code, _text(response.text)


def test_the_route_shows_who_writes_the_table_to_a_user_as_far_as_their_dags_go(
    client: Any, add_rows: Callable[..., None], lease_store: Any, tmp_path: Path
) -> None:
    table = tmp_path / "orders"
    _real_table(table)
    now = time.time()
    lost = lost_try(str(table), started_at=now - 5, winning_version=3, kind=ConflictKind.DELETE_READ)
    uri = f"file://{table}"
    append = committed_try(uri, started_at=now - 9, version=1)
    theirs = committed_try(f"{table}/", started_at=now - 8, version=2)
    merge = committed_try(str(table), started_at=now - 2, version=4)
    add_rows(
        TaskRow(MINE, "run_1", "append", _report(append)),
        TaskRow(THEIRS, "run_1", "append_b", _report(theirs)),
        TaskRow(MINE, "run_1", "merge", _report(lost, merge)),
    )
    _grant(lease_store, uri, OpKind.MERGE, f"{MINE}.merge/run_2")
    _grant(lease_store, str(table), OpKind.MERGE, "<b>elsewhere</b>.merge/run_9")

    assert client.get("/table", params={"table": str(table)}).status_code == 401

    status, text = _page(client, bearer("viewer", "viewer"), table=f"{table}/")
    assert status == 200, text
    assert f"Who is fighting over {table}" in text and THEIRS not in text
    commits = text.split("Commits version", 1)[1]
    assert re.search(rf"v4 .* WRITE .* {MINE}\.merge run run_1", commits)
    assert re.search(r"v3 .* DELETE predicate=.* outside Airflow engineInfo=delta-rs:\S+ .* 1 v2", commits)
    assert re.search(r"v2 .* WRITE .* an Airflow task the provider's commit tag", commits)
    assert re.search(rf"v1 .* {MINE}\.append run run_1", commits)
    assert re.search(r"v0 .* outside Airflow", commits)
    winners = text.split("Commits that made writers lose", 1)[1].split("Writers outside Airflow", 1)[0]
    assert re.search(rf"v3 .* DELETE outside Airflow .* 1 {MINE}\.merge x1 DELETE_READ x1", winners)
    outside = text.split("Writers outside Airflow", 1)[1].split("Live leases", 1)[0]
    assert re.search(
        r"engineInfo=delta-rs:\S+, clientVersion=\S+ 2 (DELETE x1, WRITE x1|WRITE x1, DELETE x1)", outside
    )
    leases = text.split("Live leases and turns", 1)[1].split("Commits version", 1)[0]
    assert re.search(
        rf"1 MERGE the whole table {MINE}\.merge/run_2 .* - 2 MERGE the whole table <b>elsewhere</b>", leases
    )
    assert leases.rstrip().endswith("#1")
    html = client.get("/table", params={"table": str(table)}, headers=bearer("viewer", "viewer")).text
    assert f"href='/deltacc/task-instance/{MINE}/run_1/merge/-1'" in html and "<b>elsewhere" not in html

    admin = _page(client, bearer("admin", "admin"), table=str(table))[1]
    assert re.search(rf"v2 .* {THEIRS}\.append_b run run_1", admin)

    # The conflicts page's link for the table opens this view over the conflicts page's range.
    conflicts = client.get("/conflicts", headers=bearer("viewer", "viewer")).text
    links = [unescape(h) for h in re.findall(r"<a class='fighting' href='([^']+)'", conflicts)]
    assert any(str(table) in unquote(link) for link in links), links
    link = next(link for link in links if str(table) in unquote(link))
    followed = client.get(link.removeprefix("/deltacc"), headers=bearer("viewer", "viewer"))
    assert followed.status_code == 200 and re.search(rf"v1 .* {MINE}\.append", _text(followed.text))


def test_the_route_answers_bad_parameters_with_a_400_page(client: Any) -> None:
    viewer = bearer("viewer", "viewer")
    status, text = _page(client, viewer, table="/lake/orders", since="last tuesday")
    assert status == 400 and "since='last tuesday': not a date or a time: give an ISO date" in text
    status, text = _page(client, viewer, table="/lake/orders", until="2026-11-20T25:00")
    assert status == 400 and "until='2026-11-20T25:00': not a date or a time" in text
    status, text = _page(client, viewer, table="/lake/orders", since="2026-11-20", until="2026-11-19")
    assert status == 400 and "since='2026-11-20': not before until='2026-11-19'" in text
    status, text = _page(client, viewer, table=" ")
    assert status == 400 and "table=' ': names no table" in text


def test_a_log_or_lease_store_that_cannot_be_read_is_said_on_the_page_and_the_conflicts_still_show(
    client: Any, add_rows: Callable[..., None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing"
    lost = lost_try(str(missing), started_at=time.time() - 5, winning_version=5, winning_operation="MERGE")
    add_rows(TaskRow(MINE, "run_1", "merge", _report(lost)))
    monkeypatch.delenv("AIRFLOW__DELTACC__LEASE_STORE_CONN_ID", raising=False)
    monkeypatch.setenv("DELTACC_LEASE_STORE_URL", "mysql://deltacc:lease-pass-4242@db.internal/leases")

    status, text = _page(client, bearer("viewer", "viewer"), table=str(missing))

    assert status == 200, text
    assert "The Delta log was not read: TableNotFoundError" in text
    assert (
        "the lease store cannot be opened: ValueError: lease store URL" in text
        and "unsupported scheme" in text
    )
    assert "lease-pass-4242" not in text
    assert re.search(rf"v5 unknown MERGE unknown .* 1 {MINE}\.merge x1 APPEND x1", text)
    assert "Unknown: the log was not read." in text

    # A table no DAG the user may read writes: its log is not read for them.
    status, text = _page(client, bearer("viewer", "viewer"), table=str(tmp_path / "elsewhere"))
    assert status == 200 and "no commit report of a DAG you may read names this table" in text


@pytest.fixture
def serialized(airflow_db: Path) -> Iterator[Callable[..., None]]:
    """``serialized(*dags)``: write DAGs to the metadata DB as the DAG processor does; removed after."""
    from tests.support.serialized_dags import remove_serialized_dags, write_serialized_dags

    written: set[str] = set()

    def write(*dags: Any) -> None:
        written.update(d.dag_id for d in dags)
        write_serialized_dags(dags)

    yield write
    remove_serialized_dags(written)


def test_a_table_on_s3_is_read_through_the_connections_of_its_newest_writer_in_the_serialized_dag(
    client: Any,
    add_rows: Callable[..., None],
    serialized: Callable[..., None],
    s3_server: Any,
    aws_conn_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyarrow as pa
    from airflow.sdk import DAG
    from deltalake import CommitProperties, write_deltalake

    from airflow_provider_deltacc.operators import DeltaMergeOperator
    from tests.support.s3_server import SECRET_KEY

    location = f"s3a://{s3_server.new_bucket()}/orders"
    options = {**s3_server.storage_options(), "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    data = pa.table({"id": [1], "p": ["a"]})
    s3_uri = location.replace("s3a://", "s3://")
    write_deltalake(s3_uri, data, storage_options=options)
    tagged = CommitProperties(custom_metadata={"userMetadata": TAG})
    write_deltalake(s3_uri, data, mode="append", storage_options=options, commit_properties=tagged)
    with DAG(ON_S3, schedule=None, start_date=datetime(2026, 1, 1)) as dag:
        DeltaMergeOperator(task_id="merge", table=location, source=ROWS, keys=["id"], aws_conn_id=aws_conn_id)
        DeltaMergeOperator.partial(
            task_id="merge_many", table=location, keys=["id"], aws_conn_id=aws_conn_id
        ).expand(source=[ROWS])
        DeltaMergeOperator(
            task_id="templated", table=location, source=ROWS, keys=["id"], aws_conn_id="{{ var.value.s3 }}"
        )
    serialized(dag)
    committed = committed_try(location, started_at=time.time(), version=1)
    add_rows(TaskRow(ON_S3, "run_1", "merge", _report(committed)))
    admin = bearer("admin", "admin")

    status, text = _page(client, admin, table=f"{s3_uri}/")

    assert status == 200, text
    assert re.search(rf"v1 .* {ON_S3}\.merge run run_1", text) and re.search(r"v0 .* outside Airflow", text)
    assert SECRET_KEY not in text and "was not read" not in text
    mapped, note = fighting.task_storage_options(ON_S3, "merge_many")
    assert note is None and mapped is not None and mapped["AWS_ENDPOINT_URL"] == s3_server.endpoint
    assert fighting.task_storage_options(ON_S3, "templated") == (
        None,
        f"{ON_S3}.templated's aws_conn_id is a template, not used here",
    )
    assert fighting.task_storage_options("ui_fighting_nowhere", "merge")[1] == (
        "ui_fighting_nowhere.merge is not in a serialized DAG, so no connection of it is used"
    )

    monkeypatch.delenv("AIRFLOW_CONN_DELTACC_S3")
    status, text = _page(client, admin, table=location)
    assert (
        status == 200
        and f"The Delta log was not read: DeltaCCInputError: aws_conn_id='{aws_conn_id}'" in text
    )
    assert SECRET_KEY not in text
