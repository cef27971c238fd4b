"""google_cloud_platform connections as GCS connector settings and delta-rs options: configuration only,
no GCS service."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_deltacc.contract.redaction import is_sensitive_key
from airflow_provider_deltacc.object_storage.gcp import GcpCredentials

pytestmark = pytest.mark.unit

PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvFAKEkeyMATERIAL\n-----END PRIVATE KEY-----\n"
KEY: dict[str, Any] = {
    "type": "service_account",
    "project_id": "key-project",
    "private_key_id": "0123abcd",
    "private_key": PRIVATE_KEY,
    "client_email": "writer@key-project.iam.gserviceaccount.com",
}


def test_a_key_file_path() -> None:
    creds = GcpCredentials.from_fields(extra={"key_path": "/keys/writer.json", "project": "lake"})
    assert creds.hadoop_conf() == {
        "fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",
        "fs.gs.auth.service.account.json.keyfile": "/keys/writer.json",
        "fs.gs.project.id": "lake",
    }
    assert creds.hadoop_conf(keyfile_path="/elsewhere.json") == creds.hadoop_conf()  # only for inline keys
    assert creds.delta_rs_options() == {"GOOGLE_SERVICE_ACCOUNT": "/keys/writer.json"}
    assert creds.secrets() == []


def test_an_inline_key_as_json_text() -> None:
    creds = GcpCredentials.from_fields(extra={"keyfile_dict": json.dumps(KEY), "project_id": "lake"})
    assert creds.hadoop_conf() == {
        "fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",  # 3.x fails for want of the file
        "fs.gs.auth.service.account.enable": "true",
        "fs.gs.auth.service.account.email": KEY["client_email"],
        "fs.gs.auth.service.account.private.key.id": "0123abcd",
        "fs.gs.auth.service.account.private.key": PRIVATE_KEY,
        "fs.gs.project.id": "lake",
    }
    assert json.loads(creds.delta_rs_options()["GOOGLE_SERVICE_ACCOUNT_KEY"]) == KEY
    assert PRIVATE_KEY in creds.secrets() and creds.keyfile_json in creds.secrets()
    assert json.dumps(PRIVATE_KEY)[1:-1] in creds.secrets()  # as it appears inside the JSON
    assert "PRIVATE KEY" not in repr(creds) and "MIIEv" not in repr(creds)


def test_an_inline_key_written_to_a_file_by_the_job() -> None:
    creds = GcpCredentials.from_fields(extra={"keyfile_dict": KEY})
    assert creds.hadoop_conf(keyfile_path="/tmp/job/key.json") == {
        "fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",
        "fs.gs.auth.service.account.json.keyfile": "/tmp/job/key.json",
        "fs.gs.project.id": "key-project",  # the key's project when the connection names none
    }


def test_an_older_connections_prefixed_extras_and_typed_newlines() -> None:
    typed = dict(KEY, private_key=PRIVATE_KEY.replace("\n", "\\n"))  # "\n" typed into the form
    creds = GcpCredentials.from_fields(
        extra={
            "extra__google_cloud_platform__keyfile_dict": json.dumps(typed),
            "extra__google_cloud_platform__project": "lake",
            "extra__google_cloud_platform__scope": "https://www.googleapis.com/auth/cloud-platform",
        }
    )
    assert creds.hadoop_conf()["fs.gs.auth.service.account.private.key"] == PRIVATE_KEY
    assert creds.project_id == "lake"


def test_no_key_passes_only_the_project() -> None:
    creds = GcpCredentials.from_fields(extra={"project": "lake"})
    assert creds.hadoop_conf() == {"fs.gs.project.id": "lake"}  # the job's own credentials apply
    assert creds.delta_rs_options() == {}
    assert GcpCredentials.from_fields(extra={}).hadoop_conf() == {}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"keyfile_dict": '{"private_key": "' + PRIVATE_KEY.replace("\n", "\\n") + '",'}, "not valid JSON"),
        ({"keyfile_dict": json.dumps([PRIVATE_KEY])}, "is not a JSON object"),
        ({"keyfile_dict": dict(KEY, client_email="")}, "lacks client_email"),
        ({"keyfile_dict": {"private_key": PRIVATE_KEY}}, "lacks client_email, private_key_id:"),
        ({"keyfile_dict": dict(KEY, private_key=None)}, "lacks private_key:"),
        ({"keyfile_dict": dict(KEY, private_key="MIIEvFAKEkeyMATERIAL")}, "private_key is not a PEM"),
        ({"keyfile_dict": KEY, "key_path": "/keys/k.json"}, "both extra key_path and extra keyfile_dict"),
        ({"key_path": "/keys/k.p12"}, "key_path='/keys/k.p12' is not a JSON key file"),
        ({"key_secret_name": "writer-key"}, "extra key_secret_name is not supported"),
        ({"credential_config_file": "/wif.json"}, "extra credential_config_file is not supported"),
        ({"impersonation_chain": "a@b.iam"}, "extra impersonation_chain is not supported"),
    ],
)
def test_malformed_connections_are_refused_by_field(extra: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError) as raised:
        GcpCredentials.from_fields(extra=extra)
    assert says in str(raised.value)
    assert "MIIEv" not in str(raised.value)


def test_a_key_that_is_not_json_is_still_hidden() -> None:
    creds = GcpCredentials(keyfile_json="MIIEv not json")
    assert creds.secrets() == ["MIIEv not json"]
    with pytest.raises(ValueError, match="extra keyfile_dict is not valid JSON"):
        creds.check()


def test_every_setting_that_carries_the_key_is_redacted_by_its_key() -> None:
    creds = GcpCredentials.from_fields(extra={"keyfile_dict": KEY})
    for settings in (creds.hadoop_conf(), creds.delta_rs_options()):
        carrying = {key for key, value in settings.items() if value in creds.secrets()}
        assert carrying and all(is_sensitive_key(key) for key in carrying)
