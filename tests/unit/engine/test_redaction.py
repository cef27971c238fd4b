"""Which settings are secrets, and how they are hidden in text and spec errors."""

from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.exceptions import SpecError
from airflow_provider_deltacc.contract.redaction import (
    REDACTED,
    is_sensitive_key,
    redact_text,
    sensitive_values,
)
from airflow_provider_deltacc.contract.spec_parse import parse_spec

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "key",
    [
        "spark.hadoop.fs.s3a.secret.key",
        "spark.hadoop.fs.s3a.access.key",
        "spark.hadoop.fs.s3a.session.token",
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net",
        "spark.hadoop.fs.azure.sas.c.acct.blob.core.windows.net",
        "spark.hadoop.google.cloud.auth.service.account.json.keyfile.private.key",
        "spark.kerberos.keytab",
        "spark.hadoop.fs.gs.auth.client.secret",
        "HivePassword",
        "spark.ssl.keyStorePassword",
        "AWS_SECRET_ACCESS_KEY",
        "credentials",
        "api_key",
    ],
)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "spark.sql.shuffle.partitions",
        "spark.delta.logStore.s3a.impl",
        "spark.databricks.delta.write.txnAppId",
        "spark.app.name",
        "spark.sql.sources.partitionOverwriteMode",
        "monkey",
    ],
)
def test_ordinary_keys(key: str) -> None:
    assert not is_sensitive_key(key)


def test_redaction_of_secrets_in_text() -> None:
    conf = {
        "spark.hadoop.fs.s3a.secret.key": "wJalrXUtnFEMI",
        "spark.hadoop.fs.s3a.access.key": "AKIAIOSFODNN7",
        "spark.security.credentials.hbase.enabled": "false",
        "spark.app.name": "orders",
    }
    # flags of sensitive-looking keys are not secrets to search for (they would redact every "false")
    assert sensitive_values(conf) == ["wJalrXUtnFEMI", "AKIAIOSFODNN7"]
    command = (
        "spark-submit --conf spark.hadoop.fs.s3a.access.key=AKIAIOSFODNN7 --conf spark.app.name=orders "
        "--conf spark.hadoop.fs.s3a.session.token='tok en' --principal svc"
    )
    redacted = redact_text(command, ["hunter22"])
    assert "AKIAIOSFODNN7" not in redacted and "tok en" not in redacted
    assert "spark.app.name=orders" in redacted and "--principal svc" in redacted
    assert redact_text("login failed for hunter22 at host", ["hunter22", "abc"]) == (
        f"login failed for {REDACTED} at host"
    )
    assert redact_text("a b c", ["abc", ""]) == "a b c"  # short values are not searched for


def test_spec_errors_never_echo_a_sensitive_conf_value() -> None:
    spec = {
        "operation": "delete",
        "table": "/t",
        "options": {"condition": "true"},
        "spark_conf": {"spark.hadoop.fs.s3a.secret.key": {"nested": "wJalrXUtnFEMI"}},
    }
    with pytest.raises(SpecError) as raised:
        parse_spec(spec)
    assert raised.value.field == "spark_conf.spark.hadoop.fs.s3a.secret.key"
    assert "wJalrXUtnFEMI" not in str(raised.value) and raised.value.value == REDACTED
