"""An ``aws`` connection's credentials, region and endpoint, as Spark S3A settings and delta-rs options.

The fields follow the amazon provider's ``aws`` connection: the login is the access key id and the
password the secret key (or ``aws_access_key_id``/``aws_secret_access_key`` in the extras), and the extras
may carry ``aws_session_token``, ``region_name`` and ``endpoint_url`` (top level, or
``service_config.s3.endpoint_url``, for S3-compatible stores). A connection without keys passes only its
region and endpoint: the credentials then come from the default chain where the job runs (environment,
instance profile).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

TEMPORARY_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
SIMPLE_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"


@dataclass(frozen=True)
class AwsCredentials:
    """What an ``aws`` connection tells Spark and delta-rs.

    :param access_key_id: the access key id.
    :param secret_access_key: the secret key.
    :param session_token: a session token (temporary credentials).
    :param region: the region.
    :param endpoint_url: an S3-compatible endpoint, e.g. ``http://127.0.0.1:9000`` (path-style access).
    """

    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    region: str | None = None
    endpoint_url: str | None = None

    @classmethod
    def from_fields(
        cls, *, login: str | None, password: str | None, extra: Mapping[str, Any]
    ) -> AwsCredentials:
        """Read a connection's fields.

        :param login: the connection's login.
        :param password: the connection's password.
        :param extra: its extras, parsed.
        :raises ValueError: a key id without a secret, or an endpoint that is not an http(s) URL.
        """
        service = extra.get("service_config")
        s3_service = service.get("s3") if isinstance(service, Mapping) else None
        endpoint = extra.get("endpoint_url") or (
            s3_service.get("endpoint_url") if isinstance(s3_service, Mapping) else None
        )
        credentials = cls(
            access_key_id=login or extra.get("aws_access_key_id") or None,
            secret_access_key=password or extra.get("aws_secret_access_key") or None,
            session_token=extra.get("aws_session_token") or None,
            region=extra.get("region_name") or None,
            endpoint_url=str(endpoint) if endpoint else None,
        )
        credentials.check()
        return credentials

    def check(self) -> None:
        """Refuse half a key pair and an endpoint that is not an http(s) URL.

        :raises ValueError: naming the field.
        """
        if bool(self.access_key_id) != bool(self.secret_access_key):
            missing = "password (the secret key)" if self.access_key_id else "login (the access key id)"
            raise ValueError(f"the connection has half a key pair: set its {missing} too")
        if self.session_token and not self.access_key_id:
            raise ValueError("extra aws_session_token needs the key pair (login and password) with it")
        if self.endpoint_url:
            parts = urlsplit(self.endpoint_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"endpoint_url={self.endpoint_url!r} is not an http(s) URL; use e.g. http://127.0.0.1:9000"
                )

    @property
    def has_keys(self) -> bool:
        return bool(self.access_key_id and self.secret_access_key)

    @property
    def plain_http(self) -> bool:
        return bool(self.endpoint_url) and urlsplit(self.endpoint_url or "").scheme == "http"

    def hadoop_conf(self) -> dict[str, str]:
        """Hadoop S3A settings, as runtime session settings (``fs.s3a.*``): the Spark job sets them on the
        operation's session, so they travel in the job spec and never on the spark-submit command line."""
        conf: dict[str, str] = {}
        if self.has_keys:
            conf["fs.s3a.access.key"] = str(self.access_key_id)
            conf["fs.s3a.secret.key"] = str(self.secret_access_key)
            if self.session_token:
                conf["fs.s3a.session.token"] = self.session_token
            # Only the connection's keys: a wrong key fails instead of falling back to the environment's.
            conf["fs.s3a.aws.credentials.provider"] = (
                TEMPORARY_PROVIDER if self.session_token else SIMPLE_PROVIDER
            )
        if self.region:
            conf["fs.s3a.endpoint.region"] = self.region
        if self.endpoint_url:
            conf["fs.s3a.endpoint"] = self.endpoint_url
            conf["fs.s3a.path.style.access"] = "true"
            conf["fs.s3a.connection.ssl.enabled"] = "false" if self.plain_http else "true"
        return conf

    def delta_rs_options(self) -> dict[str, str]:
        """delta-rs ``storage_options`` for the same store."""
        options: dict[str, str] = {}
        if self.has_keys:
            options["AWS_ACCESS_KEY_ID"] = str(self.access_key_id)
            options["AWS_SECRET_ACCESS_KEY"] = str(self.secret_access_key)
            if self.session_token:
                options["AWS_SESSION_TOKEN"] = self.session_token
        if self.region:
            options["AWS_REGION"] = self.region
        if self.endpoint_url:
            options["AWS_ENDPOINT_URL"] = self.endpoint_url
            options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
            if self.plain_http:
                options["AWS_ALLOW_HTTP"] = "true"
        return options

    def secrets(self) -> list[str]:
        """The values no log may show."""
        return [value for value in (self.secret_access_key, self.session_token) if value]
