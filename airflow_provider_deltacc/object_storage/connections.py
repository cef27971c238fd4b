"""Look up an object store's Airflow connection, once per task, with its secrets masked in the task log.

A task names up to one connection per cloud: ``aws_conn_id`` (an ``aws`` connection), ``azure_conn_id`` (a
``wasb`` or ``adls`` connection) and ``gcp_conn_id`` (a ``google_cloud_platform`` connection). Each becomes
Hadoop settings for the Spark job's session and delta-rs storage options for every JVM-free read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import Any, Protocol

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.object_storage.aws import AwsCredentials
from airflow_provider_deltacc.object_storage.azure import AzureCredentials
from airflow_provider_deltacc.object_storage.gcp import GcpCredentials

AWS_CONN_ID = "aws_conn_id"
AZURE_CONN_ID = "azure_conn_id"
GCP_CONN_ID = "gcp_conn_id"
STORE_CONN_FIELDS = (AWS_CONN_ID, AZURE_CONN_ID, GCP_CONN_ID)


class StoreCredentials(Protocol):
    """What one object store's connection tells Spark and delta-rs."""

    def hadoop_conf(self) -> dict[str, str]: ...

    def delta_rs_options(self) -> dict[str, str]: ...

    def secrets(self) -> list[str]: ...


_READERS: dict[str, tuple[str, Callable[[Any], StoreCredentials]]] = {
    AWS_CONN_ID: (
        "an 'aws' connection: login = access key id, password = secret key, extra "
        '{"region_name": ..., "endpoint_url": ...} (endpoint_url only for an S3-compatible store)',
        lambda conn: AwsCredentials.from_fields(
            login=conn.login, password=conn.password, extra=conn.extra_dejson or {}
        ),
    ),
    AZURE_CONN_ID: (
        "a 'wasb' or 'adls' connection: login = storage account, password = account key (or extra "
        "tenant_id with login = client id and password = client secret, or extra sas_token)",
        lambda conn: AzureCredentials.from_fields(
            conn_type=conn.conn_type,
            login=conn.login,
            password=conn.password,
            host=conn.host,
            extra=conn.extra_dejson or {},
        ),
    ),
    GCP_CONN_ID: (
        "a 'google_cloud_platform' connection: extra key_path (a JSON key file on every worker) or "
        "keyfile_dict (the key's JSON), and project",
        lambda conn: GcpCredentials.from_fields(extra=conn.extra_dejson or {}),
    ),
}


def store_credentials(field: str, conn_id: str) -> StoreCredentials:
    """The credentials of the connection ``field`` names; its secrets go to Airflow's secrets masker.

    :param field: ``aws_conn_id``, ``azure_conn_id`` or ``gcp_conn_id``.
    :param conn_id: the connection id.
    :raises DeltaCCInputError: naming ``field`` when the connection is missing or malformed.
    """
    from airflow.sdk import BaseHook

    from airflow_provider_deltacc.observability.secrets import connection_secrets, mask_values

    wanted, read = _READERS[field]
    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # AirflowNotFoundException, or a secrets backend error
        raise DeltaCCInputError(
            f"{field}={conn_id!r}: no such Airflow connection ({type(exc).__name__}). Create {wanted}, "
            "where the workers and the triggerer read connections",
            field=field,
            value=conn_id,
        ) from None
    mask_values(connection_secrets(conn))
    try:
        credentials = read(conn)
        credentials.hadoop_conf()  # an Azure connection without an account is found out here
    except ValueError as exc:
        raise DeltaCCInputError(f"{field}={conn_id!r}: {exc}", field=field, value=conn_id) from None
    mask_values(credentials.secrets())
    return credentials


def aws_credentials(aws_conn_id: str) -> AwsCredentials:
    """The credentials, region and endpoint of an ``aws`` connection (see :func:`store_credentials`)."""
    credentials = store_credentials(AWS_CONN_ID, aws_conn_id)
    assert isinstance(credentials, AwsCredentials)
    return credentials


@dataclass(frozen=True)
class StoreConnections:
    """The object-store connections a task names (each may be None).

    :param aws_conn_id: an ``aws`` connection.
    :param azure_conn_id: a ``wasb`` or ``adls`` connection.
    :param gcp_conn_id: a ``google_cloud_platform`` connection.
    """

    aws_conn_id: str | None = None
    azure_conn_id: str | None = None
    gcp_conn_id: str | None = None

    @classmethod
    def of(cls, task: Any) -> StoreConnections:
        """The connections an operator, sensor, trigger or hook names in its attributes of those names."""
        return cls(*(getattr(task, name, None) or None for name in STORE_CONN_FIELDS))

    def __bool__(self) -> bool:
        return any(astuple(self))

    def credentials(self) -> list[StoreCredentials]:
        """Each named connection's credentials, looked up now."""
        named = zip(STORE_CONN_FIELDS, astuple(self), strict=True)
        return [store_credentials(field, conn_id) for field, conn_id in named if conn_id]


def hadoop_conf_of(credentials: list[StoreCredentials]) -> dict[str, str]:
    """The Hadoop settings of every connection, merged."""
    return {key: value for each in credentials for key, value in each.hadoop_conf().items()}


def delta_rs_options_of(credentials: list[StoreCredentials]) -> dict[str, str]:
    """The delta-rs storage options of every connection, merged."""
    return {key: value for each in credentials for key, value in each.delta_rs_options().items()}


def storage_options_for(
    connections: StoreConnections | str | None, storage_options: dict[str, str] | None = None
) -> dict[str, str] | None:
    """delta-rs ``storage_options``: the connections', under those given explicitly; None when neither.

    :param connections: the task's connections (a plain string is an ``aws_conn_id``), or None.
    :param storage_options: explicit options, which win over the connections'.
    """
    if isinstance(connections, str):
        connections = StoreConnections(aws_conn_id=connections)
    if not connections:
        return dict(storage_options) if storage_options else None
    return {**delta_rs_options_of(connections.credentials()), **(storage_options or {})}
