"""An Azure storage connection (``wasb`` or ``adls``) as Hadoop ABFS settings and delta-rs options.

The fields follow the microsoft-azure provider's ``wasb`` (Azure Blob Storage) and ``adls`` (Azure Data Lake
Storage Gen2) connections, whose hooks read them the same way:

* account key: the login is the storage account name and the password its key (or the extras
  ``shared_access_key`` or ``account_key``);
* service principal: extra ``tenant_id``; the login is then the client (application) id and the password
  the client secret (or the extras ``client_id`` and ``client_secret``; with extra ``client_id`` the login
  is the account name);
* SAS token: extra ``sas_token``, the token or a URL that carries it
  (``https://<account>.blob.core.windows.net/?sv=...``);
* extra ``connection_string`` with an ``AccountKey`` or a ``SharedAccessSignature``.

When several are set, the hooks' precedence applies: connection string, service principal,
``shared_access_key``, ``sas_token``, password, ``account_key``. The storage account is extra
``account_name``, else the host (an ``adls`` connection's host is the account name, a ``wasb`` connection's
the account URL), else the login (not a service principal's), else the connection string's or the SAS URL's.
Extras may carry the ``extra__wasb__``/``extra__adls__`` prefix of older connections. A connection without
credentials passes only its account: the credentials then come from where the job runs. Managed identity
extras are refused rather than ignored, and only Azure's public cloud (``*.core.windows.net``) is mapped.

These mappings are tested on configuration only: no ADLS or Blob Storage service runs in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

CONN_TYPES = ("wasb", "adls")
PUBLIC_SUFFIX = "core.windows.net"
CLIENT_CREDS_PROVIDER = "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider"
#: Storage account names: 3 to 24 lowercase letters and digits.
ACCOUNT_NAME_RE = re.compile(r"[a-z0-9]{3,24}")
#: A tenant id (a GUID) or a tenant's domain name: it goes into the token endpoint's URL path.
TENANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
#: Extras of credentials this mapping cannot carry (a managed identity picked by Azure's default chain).
UNSUPPORTED_EXTRAS = ("managed_identity_client_id", "workload_identity_tenant_id")


@dataclass(frozen=True)
class AzureCredentials:
    """What a ``wasb`` or ``adls`` connection tells Spark (ABFS) and delta-rs: one of an account key, a
    service principal or a SAS token, or none.

    :param account_name: the storage account.
    :param account_key: the account's key.
    :param tenant_id: the service principal's tenant.
    :param client_id: the service principal's client (application) id.
    :param client_secret: the service principal's secret.
    :param sas_token: a SAS token, without a leading ``?``.
    """

    account_name: str | None = None
    account_key: str | None = field(default=None, repr=False)
    tenant_id: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_fields(
        cls,
        *,
        conn_type: str,
        login: str | None,
        password: str | None,
        host: str | None,
        extra: Mapping[str, Any],
    ) -> AzureCredentials:
        """Read a connection's fields.

        :param conn_type: ``wasb`` or ``adls``.
        :param login: the connection's login.
        :param password: the connection's password.
        :param host: the connection's host.
        :param extra: its extras, parsed.
        :raises ValueError: naming the field, for a half-configured or unsupported connection.
        """
        if conn_type not in CONN_TYPES:
            raise ValueError(
                f"conn_type={conn_type!r} is not an Azure storage connection: use 'wasb' or 'adls'"
            )

        def get(name: str) -> str | None:
            value = extra[name] if name in extra else extra.get(f"extra__{conn_type}__{name}")
            return str(value) if value else None

        for name in UNSUPPORTED_EXTRAS:
            if get(name):
                raise ValueError(
                    f"extra {name} (a managed identity) is not supported: use an account key, a service "
                    "principal (extra tenant_id) or a SAS token"
                )
        tenant = get("tenant_id")
        for name in ("client_id", "client_secret"):
            if get(name) and not tenant:
                raise ValueError(f"extra {name} needs extra tenant_id (the service principal's tenant)")
        account = get("account_name") or _host_account(host, "host")
        connection_string = get("connection_string")
        if connection_string:
            credentials = _from_connection_string(connection_string, account)
        elif tenant:
            client_id = get("client_id")
            credentials = cls(
                account_name=account or (login if client_id else None) or None,
                tenant_id=tenant,
                client_id=client_id or login or None,
                client_secret=get("client_secret") or password or None,
            )
        elif get("sas_token") and not get("shared_access_key"):
            sas_account, token = _split_sas(str(get("sas_token")))
            credentials = cls(account_name=account or login or sas_account, sas_token=token)
        else:
            key = get("shared_access_key") or password or get("account_key")
            credentials = cls(account_name=account or login or None, account_key=key)
        credentials.check()
        return credentials

    def check(self) -> None:
        """Refuse a malformed account name or tenant, a service principal missing a part, and more than one
        kind of credentials.

        :raises ValueError: naming the field.
        """
        if self.account_name and not ACCOUNT_NAME_RE.fullmatch(self.account_name):
            raise ValueError(
                f"storage account name {self.account_name!r} (from the host, the login or extra "
                "account_name) is not 3 to 24 lowercase letters and digits"
            )
        if self.tenant_id and not TENANT_RE.fullmatch(self.tenant_id):
            raise ValueError(f"extra tenant_id={self.tenant_id!r} is not a tenant id or a tenant domain name")
        parts = {
            "extra tenant_id": self.tenant_id,
            "login (the client id)": self.client_id,
            "password (the client secret)": self.client_secret,
        }
        if any(parts.values()) and not all(parts.values()):
            missing = " and ".join(name for name, value in parts.items() if not value)
            raise ValueError(f"the connection has part of a service principal: set its {missing} too")
        kinds = [
            kind
            for kind, value in (
                ("an account key", self.account_key),
                ("a service principal", self.tenant_id),
                ("a SAS token", self.sas_token),
            )
            if value
        ]
        if len(kinds) > 1:
            raise ValueError(f"the connection sets {' and '.join(kinds)}: keep one")

    @property
    def has_credentials(self) -> bool:
        return bool(self.account_key or self.sas_token or self.tenant_id)

    def hadoop_conf(self, account: str | None = None) -> dict[str, str]:
        """Hadoop ABFS settings for the account's ``dfs`` endpoint, as runtime session settings
        (``fs.azure.*``): the Spark job sets them on the operation's session, so they travel in the job spec
        and never on the spark-submit command line. Empty without credentials.

        :param account: the storage account the table is in (its ``abfss://`` URI's); default: the
            connection's.
        :raises ValueError: no account is known, or an account key or SAS token is for another account.
        """
        if not self.has_credentials:
            return {}
        name = account or self.account_name
        if not name:
            raise ValueError(
                "no storage account to scope the settings to: pass the table's account, or set the "
                "connection's host (adls), login (wasb) or extra account_name"
            )
        if not ACCOUNT_NAME_RE.fullmatch(name):
            raise ValueError(f"storage account name {name!r} is not 3 to 24 lowercase letters and digits")
        if self.account_name and name != self.account_name and not self.tenant_id:
            raise ValueError(
                f"the connection's key or SAS token is for account {self.account_name!r}, not {name!r}"
            )
        host = f"{name}.dfs.{PUBLIC_SUFFIX}"
        if self.account_key:
            return {
                f"fs.azure.account.auth.type.{host}": "SharedKey",
                f"fs.azure.account.key.{host}": self.account_key,
            }
        if self.sas_token:
            return {
                f"fs.azure.account.auth.type.{host}": "SAS",
                f"fs.azure.sas.fixed.token.{host}": self.sas_token,
            }
        return {
            f"fs.azure.account.auth.type.{host}": "OAuth",
            f"fs.azure.account.oauth.provider.type.{host}": CLIENT_CREDS_PROVIDER,
            f"fs.azure.account.oauth2.client.endpoint.{host}": (
                f"https://login.microsoftonline.com/{self.tenant_id}/oauth2/token"
            ),
            f"fs.azure.account.oauth2.client.id.{host}": str(self.client_id),
            f"fs.azure.account.oauth2.client.secret.{host}": str(self.client_secret),
        }

    def delta_rs_options(self) -> dict[str, str]:
        """delta-rs ``storage_options`` for the same store (without an account name, delta-rs takes the
        table URI's)."""
        options: dict[str, str] = {}
        if self.account_name:
            options["AZURE_STORAGE_ACCOUNT_NAME"] = self.account_name
        if self.account_key:
            options["AZURE_STORAGE_ACCOUNT_KEY"] = self.account_key
        elif self.sas_token:
            options["AZURE_STORAGE_SAS_KEY"] = self.sas_token
        elif self.tenant_id:
            options["AZURE_STORAGE_CLIENT_ID"] = str(self.client_id)
            options["AZURE_STORAGE_CLIENT_SECRET"] = str(self.client_secret)
            options["AZURE_STORAGE_TENANT_ID"] = self.tenant_id
        return options

    def secrets(self) -> list[str]:
        """The values no log may show."""
        return [value for value in (self.account_key, self.client_secret, self.sas_token) if value]


def _host_account(host: str | None, what: str) -> str | None:
    """The account in an account URL or DNS name (``https://<account>.blob.core.windows.net/``), or the host
    itself when it is a bare name.

    :param host: the host, a URL or a name (never a secret: it is quoted in errors).
    :param what: the field it came from, for errors.
    """
    text = (host or "").strip()
    if not text:
        return None
    if "." not in text and "/" not in text:
        return text
    hostname = urlsplit(text if "://" in text else f"//{text}").hostname or ""
    account, _, endpoint = hostname.partition(".")
    if endpoint not in (f"blob.{PUBLIC_SUFFIX}", f"dfs.{PUBLIC_SUFFIX}"):
        raise ValueError(
            f"{what}={text!r} is not a storage account URL of Azure's public cloud: use "
            f"https://<account>.blob.{PUBLIC_SUFFIX}/ or https://<account>.dfs.{PUBLIC_SUFFIX}/"
        )
    return account


def _split_sas(sas: str) -> tuple[str | None, str]:
    """(the account, the token) of extra ``sas_token``: a token, or a URL whose query is the token.

    :param sas: the extra's value (a secret: never quoted in errors).
    """
    if "://" not in sas:
        return None, sas.lstrip("?")
    parts = urlsplit(sas)
    if not parts.query:
        raise ValueError("extra sas_token is a URL without a token (its query string is empty)")
    return _host_account(parts.hostname, "the host of extra sas_token's URL"), parts.query


def _from_connection_string(text: str, account: str | None) -> AzureCredentials:
    """The account key or SAS token of a storage connection string (``AccountName=...;AccountKey=...``).

    :param text: extra ``connection_string`` (a secret: never quoted in errors).
    :param account: the account named elsewhere in the connection, which wins.
    """
    parts: dict[str, str] = {}
    for item in text.split(";"):
        name, sep, value = item.partition("=")
        if sep:
            parts[name.strip().lower()] = value.strip()
    suffix = parts.get("endpointsuffix", PUBLIC_SUFFIX)
    if suffix != PUBLIC_SUFFIX:
        raise ValueError(
            f"extra connection_string names EndpointSuffix={suffix!r}: only Azure's public cloud "
            f"({PUBLIC_SUFFIX}) is supported"
        )
    endpoint = parts.get("blobendpoint") or parts.get("dfsendpoint")
    account = account or parts.get("accountname") or _host_account(endpoint, "connection_string's endpoint")
    key, sas = parts.get("accountkey"), parts.get("sharedaccesssignature", "")
    if not key and not sas:
        raise ValueError("extra connection_string has neither an AccountKey nor a SharedAccessSignature")
    return AzureCredentials(account_name=account, account_key=key, sas_token=None if key else sas.lstrip("?"))
