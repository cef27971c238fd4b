"""Does this S3 endpoint do conditional writes? Asked once per endpoint, before the first commit on it.

The put-if-absent log store keeps concurrent writers apart only where the store honours ``If-None-Match: *``
on a PUT. AWS S3 does (since August 2024); some S3-compatible stores ignore the header (older MinIO, some
gateways: the second create silently overwrites) or refuse it (HTTP 501). The probe creates one object twice
with the header, under the table's own prefix (``<table>/_deltacc_probe/<uuid>``, a hidden folder Delta and
VACUUM leave alone) and deletes it: the first create must succeed and the second fail with 412 Precondition
Failed. The answer is kept per endpoint for the life of the process; a store that fails is logged once, with
the endpoint and why, and its writers keep the serializing guard. A throttling answer (``503 SlowDown``) is
not an answer: the request is made again, a few times, before the store counts as not proven. A store that
cannot be reached, or still throttles, is not cached (the next write asks again) and counts as not proven.

It runs in the Airflow worker, before the write guard is chosen: the worker already reads the table's log
with delta-rs through the task's ``aws`` connection, so it has the endpoint and the keys, and three small
HTTP requests cost far less than a Spark session. Standard library only.
"""

from __future__ import annotations

import http.client
import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.storage_safety import S3_SCHEMES
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.object_storage.sigv4 import canonical_uri, signed_headers

log = logging.getLogger(__name__)

#: The endpoint name the cache uses for AWS S3 itself (no endpoint configured).
AWS_S3 = "AWS S3"
PROBE_FOLDER = "_deltacc_probe"


@dataclass(frozen=True)
class ConditionalWrites:
    """What the probe found for one endpoint.

    :param endpoint: the endpoint URL, or :data:`AWS_S3`.
    :param supported: whether a second put-if-absent of one key fails with 412.
    :param reason: what was found, in a few words.
    """

    endpoint: str
    supported: bool
    reason: str


@dataclass(frozen=True)
class _Target:
    endpoint: str
    bucket: str
    prefix: str
    region: str
    access_key: str | None
    secret_key: str | None
    session_token: str | None


_answers: dict[str, ConditionalWrites] = {}
_lock = threading.Lock()


def _option(options: Mapping[str, str], *names: str) -> str | None:
    lowered = {str(k).lower(): str(v) for k, v in options.items() if v not in (None, "")}
    for name in names:
        if lowered.get(name):
            return lowered[name].strip()
    return None


def _target(table: str, storage_options: Mapping[str, str] | None) -> _Target:
    options = {
        **{k: v for k, v in os.environ.items() if k.upper().startswith("AWS_")},
        **(storage_options or {}),
    }
    parts = urlsplit(table)
    endpoint = _option(options, "aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint")
    return _Target(
        endpoint=endpoint.rstrip("/") if endpoint else AWS_S3,
        bucket=parts.netloc,
        prefix=parts.path.strip("/"),
        region=_option(options, "aws_region", "aws_default_region", "region") or "us-east-1",
        access_key=_option(options, "aws_access_key_id", "access_key_id"),
        secret_key=_option(options, "aws_secret_access_key", "secret_access_key"),
        session_token=_option(options, "aws_session_token", "session_token", "token"),
    )


_S3A_TO_OPTIONS = {
    "fs.s3a.endpoint": "AWS_ENDPOINT_URL",
    "fs.s3a.access.key": "AWS_ACCESS_KEY_ID",
    "fs.s3a.secret.key": "AWS_SECRET_ACCESS_KEY",
    "fs.s3a.session.token": "AWS_SESSION_TOKEN",
    "fs.s3a.endpoint.region": "AWS_REGION",
}


def options_from_spark_conf(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The probe's options from S3A settings (``fs.s3a.*`` or ``spark.hadoop.fs.s3a.*``), for a task with
    no ``aws`` connection whose store is named in its Spark settings.

    :param spark_conf: the Spark settings the task can see.
    """
    options: dict[str, str] = {}
    for key, value in spark_conf.items():
        name = _S3A_TO_OPTIONS.get(str(key).removeprefix("spark.hadoop."))
        if name and value:
            options[name] = str(value)
    endpoint = options.get("AWS_ENDPOINT_URL")
    if endpoint and "://" not in endpoint:  # S3A takes a bare host; its SSL setting picks the scheme
        plain = str(spark_conf.get("spark.hadoop.fs.s3a.connection.ssl.enabled", "true")).lower() == "false"
        options["AWS_ENDPOINT_URL"] = f"{'http' if plain else 'https'}://{endpoint}"
    return options


def conditional_writes(
    table: str, storage_options: Mapping[str, str] | None = None, *, timeout_s: float = 10.0
) -> ConditionalWrites:
    """Whether the S3 endpoint of ``table`` does conditional writes (probed once per endpoint).

    :param table: an ``s3://``/``s3a://`` table path (the probe writes under it).
    :param storage_options: the task's delta-rs options (``AWS_ENDPOINT_URL``, keys, region); ``AWS_*``
        environment variables fill in what they lack.
    :param timeout_s: how long each probe request may take.
    :raises ValueError: for a table that is not on S3.
    """
    if Table(table).scheme not in S3_SCHEMES:
        raise ValueError(f"table={table!r} is not on S3; the conditional-write probe is for s3:// and s3a://")
    target = _target(table, storage_options)
    if target.endpoint == AWS_S3:
        return ConditionalWrites(AWS_S3, True, "AWS S3 honours If-None-Match on PUT (since August 2024)")
    with _lock:
        known = _answers.get(target.endpoint)
    if known is not None:
        return known
    answer, final = _probe(target, timeout_s)
    if final:
        with _lock:
            if target.endpoint in _answers:
                return _answers[target.endpoint]
            _answers[target.endpoint] = answer
    if answer.supported:
        log.info("the S3 endpoint %s does conditional writes: %s", answer.endpoint, answer.reason)
    else:
        log.warning(
            "the S3 endpoint %s does not do conditional writes (%s): writers of one S3 table there are "
            "serialized (exclusive lease)%s",
            answer.endpoint,
            answer.reason,
            "" if final else "; asked again on the next write",
        )
    return answer


def forget_answers() -> None:
    """Drop every cached answer (the next write on each endpoint probes again)."""
    with _lock:
        _answers.clear()


#: A busy store answers ``503 SlowDown`` (or ``503 ServiceUnavailable``) without doing the request; the probe
#: asks again this many times in all, after these waits, before it counts the store as not proven.
_THROTTLED = 503
_THROTTLE_WAITS_S = (0.2, 0.5, 1.0)


def _request(
    target: _Target, method: str, key: str, body: bytes, extra: dict[str, str], timeout_s: float
) -> tuple[int, str]:
    """One request, asked again after a throttling answer (S3 did nothing then, so a create is safe to
    repeat)."""
    for wait_s in _THROTTLE_WAITS_S:
        status, text = _request_once(target, method, key, body, extra, timeout_s)
        if status != _THROTTLED:
            return status, text
        log.debug(
            "the S3 endpoint %s throttled the probe's %s (%s); asking again",
            target.endpoint,
            method,
            _code(text),
        )
        time.sleep(wait_s)
    return _request_once(target, method, key, body, extra, timeout_s)


def _request_once(
    target: _Target, method: str, key: str, body: bytes, extra: dict[str, str], timeout_s: float
) -> tuple[int, str]:
    url = f"{target.endpoint}/{target.bucket}/{key}"
    headers = dict(extra)
    if target.access_key and target.secret_key:
        headers = signed_headers(
            method,
            url,
            body=body,
            access_key=target.access_key,
            secret_key=target.secret_key,
            region=target.region,
            session_token=target.session_token,
            extra=extra,
        )
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.netloc, timeout=timeout_s)
    try:
        connection.request(
            method,
            canonical_uri(parts.path),
            body=body,
            headers={**headers, "Content-Length": str(len(body))},
        )
        response = connection.getresponse()
        text = response.read(2000).decode(errors="replace")
        return response.status, text
    finally:
        connection.close()


def _code(text: str) -> str:
    start = text.find("<Code>")
    end = text.find("</Code>")
    return text[start + 6 : end] if 0 <= start < end else ""


def _probe(target: _Target, timeout_s: float) -> tuple[ConditionalWrites, bool]:
    """The answer, and whether it is final (cached): an unreachable store is asked again next time."""
    key = "/".join(p for p in (target.prefix, PROBE_FOLDER, uuid.uuid4().hex) if p)
    put_if_absent = {"If-None-Match": "*"}
    body = b"deltacc conditional-write probe\n"
    try:
        first, text = _request(target, "PUT", key, body, put_if_absent, timeout_s)
        if first >= 300:
            code = _code(text)
            return ConditionalWrites(
                target.endpoint, False, f"a put-if-absent create answered HTTP {first} {code}".strip()
            ), first in (400, 501)
        try:
            second, text = _request(target, "PUT", key, body, put_if_absent, timeout_s)
        finally:
            _delete(target, key, timeout_s)
    except OSError as exc:
        return ConditionalWrites(
            target.endpoint, False, f"the probe could not reach it: {type(exc).__name__}: {exc}"
        ), False
    if second == 412:
        return ConditionalWrites(
            target.endpoint, True, "a second put-if-absent create of one key failed with 412"
        ), True
    if second < 300:
        return ConditionalWrites(
            target.endpoint,
            False,
            f"it ignores If-None-Match: a second put-if-absent create of one key answered HTTP {second}",
        ), True
    return ConditionalWrites(
        target.endpoint,
        False,
        f"a second put-if-absent create of one key answered HTTP {second} {_code(text)}, not 412".strip(),
    ), second in (400, 501)


def _delete(target: _Target, key: str, timeout_s: float) -> None:
    try:
        _request(target, "DELETE", key, b"", {}, timeout_s)
    except OSError as exc:  # a leftover probe object is harmless: hidden, tiny
        log.debug("could not delete the probe object %s/%s: %s", target.bucket, key, exc)
