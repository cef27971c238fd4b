"""The probe's request signing matches the AWS SDK's (botocore's SigV4 for S3, payload signed)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from airflow_provider_deltacc.object_storage.sigv4 import signed_headers

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 12, 30, 5, tzinfo=UTC)


@pytest.mark.parametrize("token", [None, "session-token-1"])
def test_the_signature_is_the_sdk_signature(token: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:5123/lake/orders/_deltacc_probe/a b+c"
    body = b"probe\n"
    ours = signed_headers(
        "PUT",
        url,
        body=body,
        access_key="AKID",
        secret_key="SECRET",
        region="eu-west-1",
        session_token=token,
        extra={"If-None-Match": "*"},
        now=NOW,
    )
    import botocore.auth

    monkeypatch.setattr(botocore.auth.datetime, "datetime", _Frozen)
    request = AWSRequest(method="PUT", url=url.replace(" ", "%20").replace("+", "%2B"), data=body)
    request.headers["x-amz-content-sha256"] = ours["x-amz-content-sha256"]
    S3SigV4Auth(Credentials("AKID", "SECRET", token), "s3", "eu-west-1").add_auth(request)
    assert ours["Authorization"] == request.headers["Authorization"]
    assert ours["If-None-Match"] == "*"


class _Frozen(datetime):
    @classmethod
    def utcnow(cls) -> datetime:  # type: ignore[override]
        return NOW.replace(tzinfo=None)

    @classmethod
    def now(cls, tz: object = None) -> datetime:  # type: ignore[override]
        return NOW if tz is not None else NOW.replace(tzinfo=None)
