"""The conditional-write probe against a real S3 API server: moto honours ``If-None-Match: *``; a store that
drops the header, or refuses it with 501, does not; a store that throttles (``503 SlowDown``) is asked again,
not judged. JVM-free: the probe is three HTTP requests."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_deltacc.object_storage.conditional_writes import PROBE_FOLDER, conditional_writes
from tests.support.s3_proxy import NoConditionalWrites, Throttling, s3_proxy
from tests.support.s3_server import S3Server

pytestmark = pytest.mark.integration


def _options(s3: S3Server, endpoint: str) -> dict[str, str]:
    return {**s3.storage_options(), "AWS_ENDPOINT_URL": endpoint}


def test_moto_does_conditional_writes_and_the_answer_is_kept_for_the_endpoint(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket("probe")
    answer = conditional_writes(f"s3a://{bucket}/t", s3_server.storage_options())
    assert answer.supported, answer
    assert answer.endpoint == s3_server.endpoint
    assert "412" in answer.reason
    # Asked once per endpoint: another table there gets the same answer, without a probe.
    other = s3_server.new_bucket("probe-other")
    assert conditional_writes(f"s3://{other}/u", s3_server.storage_options()) is answer
    listed = s3_server.client().list_objects_v2(Bucket=other).get("Contents", [])
    assert listed == []
    # The probe object was deleted.
    left = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=f"t/{PROBE_FOLDER}/").get("Contents", [])
    assert left == []


@pytest.mark.parametrize(
    ("refuse", "because"),
    [(False, "ignores If-None-Match"), (True, "HTTP 501 NotImplemented")],
    ids=["header-dropped", "answers-501"],
)
def test_a_store_without_conditional_writes_fails_the_probe_with_one_warning(
    s3_server: S3Server, caplog: pytest.LogCaptureFixture, refuse: bool, because: str
) -> None:
    bucket = s3_server.new_bucket("noprobe")
    rule = NoConditionalWrites(refuse=refuse)
    with s3_proxy(s3_server.port, rule) as endpoint, caplog.at_level(logging.WARNING):
        answer = conditional_writes(f"s3a://{bucket}/t", _options(s3_server, endpoint))
        again = conditional_writes(f"s3a://{bucket}/t2", _options(s3_server, endpoint))
    assert not answer.supported and because in answer.reason, answer
    assert again is answer
    warnings = [r.getMessage() for r in caplog.records if "conditional writes" in r.getMessage()]
    assert len(warnings) == 1 and endpoint in warnings[0] and because in warnings[0], warnings
    assert rule.conditional_uploads == (1 if refuse else 2)


def test_a_throttling_store_is_asked_again_and_proven(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket("busyprobe")
    busy = Throttling(every=2, listing_delay_s=0.0)  # the first of every two requests: 503 SlowDown
    with s3_proxy(s3_server.port, busy) as endpoint:
        answer = conditional_writes(f"s3a://{bucket}/t", _options(s3_server, endpoint))
    assert answer.supported and "412" in answer.reason, answer
    assert busy.refused["other"] == 3  # each of the probe's three requests once (two creates, one delete)
    left = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=f"t/{PROBE_FOLDER}/").get("Contents", [])
    assert left == []
