"""The report a driver leaves for a submitter that does not see its stdout, the spec's ``report_trail`` and
the run-tagged commit tags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.commits import TAG_PREFIX, run_tag_prefix
from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.report_file import local_dir
from airflow_provider_deltacc.contract.spec_parse import parse_spec
from airflow_provider_deltacc.delta_log import left_report
from airflow_provider_deltacc.delta_log.left_report import read_report, remove_report
from airflow_provider_deltacc.engine.commits import new_commit_tag, tagging_run
from airflow_provider_deltacc.spark_job.leave_report import leave_report

pytestmark = pytest.mark.unit

TOKEN = "0123abcd" * 4
REPORT = {"status": "conflict_exhausted", "summary": "gave up"}


def _spec(report_dir: str | None) -> str:
    trail = {"run_token": TOKEN, "report_dir": report_dir}
    return json.dumps({"operation": "optimize", "table": "/t", "report_trail": trail})


@pytest.mark.parametrize("as_uri", [False, True])
def test_a_left_report_is_read_back_and_removed(tmp_path: Path, as_uri: bool) -> None:
    directory = tmp_path / "reports" / "nested"
    report_dir = directory.as_uri() if as_uri else str(directory)
    assert leave_report(_spec(report_dir), 3, REPORT) == str(directory / f"{TOKEN}.json")
    assert read_report(report_dir, TOKEN) == (3, REPORT)
    remove_report(report_dir, TOKEN)
    assert read_report(report_dir, TOKEN) is None
    remove_report(report_dir, TOKEN)  # already gone: fine


def test_a_uri_report_is_read_and_removed_through_delta_rs_object_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "reports"
    leave_report(_spec(str(directory)), 0, REPORT)
    assert local_dir("s3a://bucket/reports") is None  # an object store: read through delta-rs
    # The same directory as a URI the submitter reads as it reads s3a:// or abfss://: through delta-rs.
    monkeypatch.setattr(left_report, "local_dir", lambda report_dir: None)
    uri = directory.as_uri()
    assert read_report(uri, TOKEN) == (0, REPORT)
    remove_report(uri, TOKEN)
    assert read_report(uri, TOKEN) is None and not list(directory.iterdir())


def test_no_report_trail_or_no_report_dir_leaves_nothing(tmp_path: Path) -> None:
    assert leave_report(json.dumps({"operation": "optimize", "table": "/t"}), 0, REPORT) is None
    assert leave_report(_spec(None), 0, REPORT) is None
    assert leave_report("not json", 0, REPORT) is None


def test_a_report_that_cannot_be_written_does_not_fail_the_job(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert leave_report(_spec(str(blocker / "reports")), 0, REPORT) is None


def test_a_foreign_file_is_not_taken_for_a_report(tmp_path: Path) -> None:
    (tmp_path / f"{TOKEN}.json").write_text(json.dumps({"something": "else"}))
    with pytest.raises(ValueError, match="is not a report the job wrote"):
        read_report(str(tmp_path), TOKEN)


def test_the_specs_report_trail_is_validated() -> None:
    parsed = parse_spec(_spec("s3a://b/r"))
    trail = parsed.report_trail
    assert trail is not None and (trail.run_token, trail.report_dir) == (TOKEN, "s3a://b/r")
    for trail, field in [
        ({"run_token": "NOT-HEX!"}, "report_trail.run_token"),
        ({"run_token": TOKEN, "report_dir": ""}, "report_trail.report_dir"),
        ({"run_token": TOKEN, "where": "x"}, "report_trail.where"),
    ]:
        with pytest.raises(SpecError) as raised:
            parse_spec({"operation": "optimize", "table": "/t", "report_trail": trail})
        assert raised.value.field == field


def test_commit_tags_carry_the_run_token_inside_tagging_run() -> None:
    plain = new_commit_tag()
    assert plain.startswith(TAG_PREFIX) and ":" not in plain.removeprefix(TAG_PREFIX)
    with tagging_run(TOKEN):
        first, second = new_commit_tag(), new_commit_tag()
    assert first.startswith(run_tag_prefix(TOKEN)) and second.startswith(run_tag_prefix(TOKEN))
    assert first != second
    assert not new_commit_tag().startswith(run_tag_prefix(TOKEN))
    with tagging_run(None):
        assert ":" not in new_commit_tag().removeprefix(TAG_PREFIX)
