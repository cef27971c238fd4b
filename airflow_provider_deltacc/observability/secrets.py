"""Keep connection secrets and sensitive Spark settings out of task logs and rendered fields."""

from __future__ import annotations

from typing import Any

from airflow_provider_deltacc.contract.redaction import sensitive_values


def mask_sensitive_conf(conf: Any) -> None:
    """Register the values of sensitive settings (see :mod:`airflow_provider_deltacc.contract.redaction`) with
    Airflow's secrets masker, so task logs and rendered fields show ``***`` in their place.

    :param conf: Spark settings (anything but a dict is ignored, e.g. an unrendered template).
    """
    if isinstance(conf, dict):
        mask_values(sensitive_values(conf))


def mask_values(values: list[str]) -> None:
    """Register secret values with Airflow's secrets masker (task process and supervisor).

    :param values: the secrets.
    """
    if not values:
        return
    from airflow.sdk.log import mask_secret

    for value in values:
        mask_secret(value)


def connection_secrets(conn: Any) -> list[str]:
    """The secrets of a connection: its password and every sensitive extra (``keytab``, ``token``, ...),
    also inside a nested ``conf``/``spark_conf`` object of the extras.

    :param conn: an Airflow connection.
    """
    secrets = [str(conn.password)] if getattr(conn, "password", None) else []
    try:
        extra = conn.extra_dejson
    except Exception:  # an unparsable extra: nothing to add
        extra = {}
    if isinstance(extra, dict):
        secrets += sensitive_values(extra)
        for nested in extra.values():
            if isinstance(nested, dict):
                secrets += sensitive_values(nested)
    return [s for s in secrets if s]
