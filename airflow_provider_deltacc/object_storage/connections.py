"""Look up an object store's Airflow connection, once per task, with its secrets masked in the task log."""

from __future__ import annotations

from airflow_provider_deltacc.exceptions import DeltaCCInputError
from airflow_provider_deltacc.object_storage.aws import AwsCredentials

AWS_CONN_ID = "aws_conn_id"


def aws_credentials(aws_conn_id: str) -> AwsCredentials:
    """The credentials, region and endpoint of an ``aws`` connection (see
    :class:`~airflow_provider_deltacc.object_storage.aws.AwsCredentials`); its secrets are registered with
    Airflow's secrets masker.

    :param aws_conn_id: the connection id.
    :raises DeltaCCInputError: naming ``aws_conn_id`` when the connection is missing or malformed.
    """
    from airflow.sdk import BaseHook

    from airflow_provider_deltacc.hooks.secrets import connection_secrets, mask_values

    try:
        conn = BaseHook.get_connection(aws_conn_id)
    except Exception as exc:  # AirflowNotFoundException, or a secrets backend error
        raise DeltaCCInputError(
            f"aws_conn_id={aws_conn_id!r}: no such Airflow connection ({type(exc).__name__}). Create an "
            "'aws' connection where the workers and the triggerer read connections: login = access key id, "
            'password = secret key, extra {"region_name": ..., "endpoint_url": ...} (endpoint_url only '
            "for an S3-compatible store)",
            field=AWS_CONN_ID,
            value=aws_conn_id,
        ) from None
    mask_values(connection_secrets(conn))
    try:
        credentials = AwsCredentials.from_fields(
            login=conn.login, password=conn.password, extra=conn.extra_dejson or {}
        )
    except ValueError as exc:
        raise DeltaCCInputError(
            f"aws_conn_id={aws_conn_id!r}: {exc}", field=AWS_CONN_ID, value=aws_conn_id
        ) from None
    mask_values(credentials.secrets())
    return credentials


def storage_options_for(
    aws_conn_id: str | None, storage_options: dict[str, str] | None = None
) -> dict[str, str] | None:
    """delta-rs ``storage_options``: the connection's, under those given explicitly; None when neither.

    :param aws_conn_id: an ``aws`` connection, or None.
    :param storage_options: explicit options, which win over the connection's.
    """
    if not aws_conn_id:
        return dict(storage_options) if storage_options else None
    return {**aws_credentials(aws_conn_id).delta_rs_options(), **(storage_options or {})}
