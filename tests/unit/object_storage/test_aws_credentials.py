from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.object_storage.aws import SIMPLE_PROVIDER, TEMPORARY_PROVIDER, AwsCredentials
from airflow_provider_deltacc.object_storage.connections import aws_credentials, storage_options_for

pytestmark = pytest.mark.unit


def _creds(**extra: Any) -> AwsCredentials:
    return AwsCredentials.from_fields(login="AKIAX", password="s3cr3t", extra=extra)


def test_keys_region_and_endpoint_reach_s3a_as_runtime_settings() -> None:
    conf = _creds(region_name="eu-west-1", endpoint_url="http://127.0.0.1:9000").hadoop_conf()
    assert conf == {
        "fs.s3a.access.key": "AKIAX",
        "fs.s3a.secret.key": "s3cr3t",
        "fs.s3a.aws.credentials.provider": SIMPLE_PROVIDER,
        "fs.s3a.endpoint.region": "eu-west-1",
        "fs.s3a.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
    }
    assert not any(key.startswith("spark.") for key in conf)


def test_a_session_token_selects_the_temporary_credentials_provider() -> None:
    creds = _creds(aws_session_token="tok3n")
    assert creds.hadoop_conf()["fs.s3a.session.token"] == "tok3n"
    assert creds.hadoop_conf()["fs.s3a.aws.credentials.provider"] == TEMPORARY_PROVIDER
    assert creds.delta_rs_options()["AWS_SESSION_TOKEN"] == "tok3n"
    assert creds.secrets() == ["s3cr3t", "tok3n"]
    assert "s3cr3t" not in repr(creds) and "tok3n" not in repr(creds)


def test_delta_rs_options_for_an_s3_compatible_endpoint() -> None:
    options = _creds(
        service_config={"s3": {"endpoint_url": "https://minio.internal:9000"}}
    ).delta_rs_options()
    assert options == {
        "AWS_ACCESS_KEY_ID": "AKIAX",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
        "AWS_ENDPOINT_URL": "https://minio.internal:9000",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }


def test_keys_in_the_extras_and_no_keys_at_all() -> None:
    in_extra = AwsCredentials.from_fields(
        login=None, password=None, extra={"aws_access_key_id": "A", "aws_secret_access_key": "B"}
    )
    assert in_extra.delta_rs_options() == {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "B"}
    chain = AwsCredentials.from_fields(login=None, password=None, extra={"region_name": "us-east-2"})
    assert chain.hadoop_conf() == {"fs.s3a.endpoint.region": "us-east-2"}  # the default chain supplies keys


@pytest.mark.parametrize(
    ("login", "password", "extra", "says"),
    [
        ("AKIAX", None, {}, "password (the secret key)"),
        (None, "s3cr3t", {}, "login (the access key id)"),
        (None, None, {"aws_session_token": "t"}, "aws_session_token needs the key pair"),
        ("A", "B", {"endpoint_url": "127.0.0.1:9000"}, "is not an http(s) URL"),
    ],
)
def test_malformed_connections_are_refused(
    login: str | None, password: str | None, extra: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError) as raised:
        AwsCredentials.from_fields(login=login, password=password, extra=extra)
    assert says in str(raised.value)
    assert "s3cr3t" not in str(raised.value)


def test_connection_lookup_names_aws_conn_id(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DeltaCCInputError) as missing:
        aws_credentials("deltacc_no_such_aws")
    assert missing.value.field == "aws_conn_id" and "deltacc_no_such_aws" in str(missing.value)

    half = json.dumps({"conn_type": "aws", "login": "AKIAX"})
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_HALF", half)
    with pytest.raises(DeltaCCInputError, match="half a key pair") as malformed:
        aws_credentials("deltacc_half")
    assert malformed.value.field == "aws_conn_id"


def test_explicit_storage_options_win_over_the_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "aws", "login": "AKIAX", "password": "s3cr3t", "extra": {"region_name": "eu-west-1"}}
    monkeypatch.setenv("AIRFLOW_CONN_DELTACC_S3_UNIT", json.dumps(conn))
    options = storage_options_for("deltacc_s3_unit", {"AWS_REGION": "us-east-1"})
    assert options == {
        "AWS_ACCESS_KEY_ID": "AKIAX",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
        "AWS_REGION": "us-east-1",
    }
    assert storage_options_for(None, None) is None
    assert storage_options_for(None, {"AWS_REGION": "x"}) == {"AWS_REGION": "x"}
