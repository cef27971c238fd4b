"""Azure storage connections as ABFS settings and delta-rs options: configuration only, no Azure service."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_deltacc.contract.redaction import is_sensitive_key
from airflow_provider_deltacc.object_storage.azure import CLIENT_CREDS_PROVIDER, AzureCredentials

pytestmark = pytest.mark.unit

HOST = "myacct.dfs.core.windows.net"
KEY = "c2VjcmV0LWFjY291bnQta2V5=="
SECRET = "cl13nt-s3cr3t"
SAS = "sv=2024-01-01&ss=b&sig=s1gn4ture%3D"


def _creds(
    conn_type: str = "wasb",
    login: str | None = None,
    password: str | None = None,
    host: str | None = None,
    **extra: Any,
) -> AzureCredentials:
    return AzureCredentials.from_fields(
        conn_type=conn_type, login=login, password=password, host=host, extra=extra
    )


def test_a_wasb_account_key_is_login_and_password() -> None:
    creds = _creds(login="myacct", password=KEY)
    assert creds.hadoop_conf() == {
        f"fs.azure.account.auth.type.{HOST}": "SharedKey",
        f"fs.azure.account.key.{HOST}": KEY,
    }
    assert creds.delta_rs_options() == {
        "AZURE_STORAGE_ACCOUNT_NAME": "myacct",
        "AZURE_STORAGE_ACCOUNT_KEY": KEY,
    }
    assert creds.secrets() == [KEY]
    assert KEY not in repr(creds)


@pytest.mark.parametrize(
    ("conn_type", "host", "login", "password", "extra"),
    [
        ("adls", "myacct", "ignored-client-id", KEY, {}),  # an adls host is the account name
        ("adls", "https://myacct.dfs.core.windows.net", None, KEY, {}),
        ("wasb", "https://myacct.blob.core.windows.net/", None, None, {"shared_access_key": KEY}),
        ("wasb", None, "myacct", None, {"account_key": KEY}),
        ("wasb", None, None, None, {"account_name": "myacct", "extra__wasb__account_key": KEY}),
    ],
)
def test_the_account_key_and_account_in_their_other_places(
    conn_type: str, host: str | None, login: str | None, password: str | None, extra: dict[str, Any]
) -> None:
    creds = _creds(conn_type, login=login, password=password, host=host, **extra)
    assert (creds.account_name, creds.account_key, creds.tenant_id) == ("myacct", KEY, None)


def test_a_service_principal_is_tenant_id_client_id_and_secret() -> None:
    creds = _creds(
        login="app-id", password=SECRET, host="https://myacct.blob.core.windows.net/", tenant_id="tenant-1"
    )
    assert creds.hadoop_conf() == {
        f"fs.azure.account.auth.type.{HOST}": "OAuth",
        f"fs.azure.account.oauth.provider.type.{HOST}": CLIENT_CREDS_PROVIDER,
        f"fs.azure.account.oauth2.client.endpoint.{HOST}": (
            "https://login.microsoftonline.com/tenant-1/oauth2/token"
        ),
        f"fs.azure.account.oauth2.client.id.{HOST}": "app-id",
        f"fs.azure.account.oauth2.client.secret.{HOST}": SECRET,
    }
    assert creds.delta_rs_options() == {
        "AZURE_STORAGE_ACCOUNT_NAME": "myacct",
        "AZURE_STORAGE_CLIENT_ID": "app-id",
        "AZURE_STORAGE_CLIENT_SECRET": SECRET,
        "AZURE_STORAGE_TENANT_ID": "tenant-1",
    }
    assert creds.secrets() == [SECRET]
    assert SECRET not in repr(creds)


def test_a_service_principal_without_an_account_takes_the_tables() -> None:
    creds = _creds("adls", login="app-id", password=SECRET, extra__adls__tenant_id="tenant-1")
    assert creds.account_name is None
    assert "AZURE_STORAGE_ACCOUNT_NAME" not in creds.delta_rs_options()  # delta-rs reads the table URI's
    conf = creds.hadoop_conf(account="otheracct")
    assert conf["fs.azure.account.auth.type.otheracct.dfs.core.windows.net"] == "OAuth"
    with pytest.raises(ValueError, match="no storage account"):
        creds.hadoop_conf()


def test_service_principal_parts_in_the_extras_leave_the_login_as_the_account() -> None:
    creds = _creds(login="myacct", tenant_id="t", client_id="app-id", client_secret=SECRET)
    assert (creds.account_name, creds.client_id, creds.client_secret) == ("myacct", "app-id", SECRET)


def test_a_sas_token_or_a_sas_url() -> None:
    creds = _creds(login="myacct", sas_token=f"?{SAS}")
    assert creds.hadoop_conf() == {
        f"fs.azure.account.auth.type.{HOST}": "SAS",
        f"fs.azure.sas.fixed.token.{HOST}": SAS,
    }
    assert creds.delta_rs_options() == {"AZURE_STORAGE_ACCOUNT_NAME": "myacct", "AZURE_STORAGE_SAS_KEY": SAS}
    assert creds.secrets() == [SAS]
    from_url = _creds(sas_token=f"https://myacct.blob.core.windows.net/?{SAS}")
    assert (from_url.account_name, from_url.sas_token) == ("myacct", SAS)
    assert SAS not in repr(from_url)


def test_a_connection_string_with_a_key_or_a_sas() -> None:
    keyed = _creds(
        "adls",
        connection_string=f"DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey={KEY};"
        "EndpointSuffix=core.windows.net",
    )
    assert keyed.delta_rs_options() == {
        "AZURE_STORAGE_ACCOUNT_NAME": "myacct",
        "AZURE_STORAGE_ACCOUNT_KEY": KEY,
    }
    signed = _creds(
        connection_string=f"BlobEndpoint=https://myacct.blob.core.windows.net/;SharedAccessSignature={SAS}"
    )
    assert (signed.account_name, signed.sas_token, signed.account_key) == ("myacct", SAS, None)


@pytest.mark.parametrize(
    ("extra", "password", "kind"),
    [
        ({"tenant_id": "t", "connection_string": f"AccountKey={KEY}"}, SECRET, "account_key"),
        ({"sas_token": SAS, "shared_access_key": KEY}, "p4ss", "account_key"),
        ({"sas_token": SAS, "account_key": KEY}, "p4ss", "sas_token"),
        ({"account_key": "other"}, KEY, "account_key"),
    ],
)
def test_the_providers_precedence_when_several_are_set(
    extra: dict[str, Any], password: str, kind: str
) -> None:
    """Connection string, service principal, shared_access_key, sas_token, password, account_key."""
    creds = _creds(login="myacct", password=password, **extra)
    assert getattr(creds, kind) == (SAS if kind == "sas_token" else KEY)


def test_no_credentials_pass_only_the_account() -> None:
    creds = _creds("adls", host="myacct")
    assert creds.hadoop_conf() == {}  # the cluster's own ABFS settings apply
    assert creds.delta_rs_options() == {"AZURE_STORAGE_ACCOUNT_NAME": "myacct"}
    assert creds.secrets() == []


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"conn_type": "azure"}, "conn_type='azure'"),
        (
            {"login": "myacct", "password": SECRET, "client_id": "app"},
            "extra client_id needs extra tenant_id",
        ),
        ({"password": SECRET, "client_secret": SECRET}, "extra client_secret needs extra tenant_id"),
        ({"password": SECRET, "tenant_id": "t"}, "login (the client id)"),
        ({"login": "app-id", "tenant_id": "t"}, "password (the client secret)"),
        ({"login": "app", "password": SECRET, "tenant_id": "t/../x"}, "extra tenant_id="),
        ({"login": "MyAcct", "password": SECRET}, "storage account name 'MyAcct'"),
        ({"host": "https://myacct.blob.core.chinacloudapi.cn", "password": SECRET}, "host="),
        ({"connection_string": f"AccountName=myacct;Secret={SECRET}"}, "extra connection_string has neither"),
        ({"connection_string": f"AccountKey={SECRET};EndpointSuffix=x.cn"}, "EndpointSuffix='x.cn'"),
        ({"sas_token": f"https://myacct.blob.core.windows.net/{SECRET}"}, "extra sas_token is a URL without"),
        ({"sas_token": f"https://example.com/?{SECRET}"}, "the host of extra sas_token's URL"),
        ({"password": SECRET, "managed_identity_client_id": "mi"}, "extra managed_identity_client_id"),
    ],
)
def test_malformed_connections_are_refused_by_field(fields: dict[str, Any], says: str) -> None:
    fields = dict(fields)
    named = {name: fields.pop(name) for name in ("conn_type", "login", "password", "host") if name in fields}
    with pytest.raises(ValueError) as raised:
        _creds(**named, **fields)
    assert says in str(raised.value)
    assert SECRET not in str(raised.value)


def test_more_than_one_kind_is_refused_when_built_directly() -> None:
    with pytest.raises(ValueError, match="an account key and a SAS token: keep one") as raised:
        AzureCredentials(account_name="myacct", account_key=KEY, sas_token=SAS).check()
    assert KEY not in str(raised.value) and SAS not in str(raised.value)


def test_a_key_is_not_used_for_another_account() -> None:
    creds = _creds(login="myacct", password=KEY)
    assert creds.hadoop_conf(account="myacct") == creds.hadoop_conf()
    with pytest.raises(ValueError, match="for account 'myacct', not 'otheracct'"):
        creds.hadoop_conf(account="otheracct")
    with pytest.raises(ValueError, match="not 3 to 24 lowercase"):
        creds.hadoop_conf(account="myacct.dfs.core.windows.net")


@pytest.mark.parametrize(
    "creds",
    [
        AzureCredentials(account_name="myacct", account_key=KEY),
        AzureCredentials(account_name="myacct", tenant_id="t", client_id="app", client_secret=SECRET),
        AzureCredentials(account_name="myacct", sas_token=SAS),
    ],
    ids=["key", "service-principal", "sas"],
)
def test_every_setting_that_carries_a_secret_is_redacted_by_its_key(creds: AzureCredentials) -> None:
    for settings in (creds.hadoop_conf(), creds.delta_rs_options()):
        carrying = {key for key, value in settings.items() if value in creds.secrets()}
        assert carrying and all(is_sensitive_key(key) for key in carrying)
