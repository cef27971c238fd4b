"""AWS Signature Version 4 for one S3 request, with the standard library only.

The conditional-write probe (:mod:`~airflow_provider_deltacc.object_storage.conditional_writes`) sends three
requests per endpoint; this keeps the worker free of an AWS SDK. Path-style requests, the payload hashed,
the ``host`` and ``x-amz-*`` headers signed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def canonical_uri(path: str) -> str:
    """The path as S3 signs it: each segment URI-encoded, ``/`` kept.

    :param path: the request path, not yet encoded.
    """
    return quote(path or "/", safe="/-_.~")


def signed_headers(
    method: str,
    url: str,
    *,
    body: bytes,
    access_key: str,
    secret_key: str,
    region: str,
    session_token: str | None = None,
    extra: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers of a signed S3 request: ``extra``, the date, the payload hash and ``Authorization``.

    :param method: the HTTP method.
    :param url: the request URL (path not yet encoded, no query).
    :param body: the payload.
    :param access_key: the access key id.
    :param secret_key: the secret key.
    :param region: the signing region.
    :param session_token: a session token (temporary credentials).
    :param extra: further headers, sent but not signed (``If-None-Match``).
    :param now: the signing time (tests pin it).
    """
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    parts = urlsplit(url)
    payload_hash = hashlib.sha256(body).hexdigest()
    signed = {"host": parts.netloc, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
    if session_token:
        signed["x-amz-security-token"] = session_token
    names = sorted(signed)
    canonical = "\n".join(
        [
            method.upper(),
            canonical_uri(parts.path),
            "",
            "".join(f"{name}:{signed[name].strip()}\n" for name in names),
            ";".join(names),
            payload_hash,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + secret_key).encode(), day)
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers = {name: value for name, value in signed.items() if name != "host"}
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, "
        f"Signature={signature}"
    )
    return {**(extra or {}), **headers}
