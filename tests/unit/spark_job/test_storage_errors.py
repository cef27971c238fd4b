from __future__ import annotations

import pytest

from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.spark_job.storage_errors import storage_input_error, storage_unreachable

pytestmark = pytest.mark.unit

NO_BUCKET = (
    "An error occurred while calling z:io.delta.tables.DeltaTable.isDeltaTable.\n: "
    "org.apache.hadoop.fs.s3a.UnknownStoreException: `s3a://gone/t/_delta_log': getFileStatus on "
    "s3a://gone/t/_delta_log: software.amazon.awssdk.services.s3.model.NoSuchBucketException"
)
REFUSED = "java.nio.file.AccessDeniedException: s3a://b/t/_delta_log: InvalidAccessKeyId (Status Code: 403)"
DOWN = "SdkClientException: Unable to execute HTTP request: Connect to 127.0.0.1:9 failed: Connection refused"


def test_a_missing_bucket_names_the_table() -> None:
    error = storage_input_error(RuntimeError(NO_BUCKET), Table("s3a://gone/t"))
    assert error is not None and (error.field, error.value) == ("table", "s3a://gone/t")
    assert "bucket 'gone' does not exist" in error.message


def test_refused_credentials_name_aws_conn_id_even_deep_in_the_cause_chain() -> None:
    try:
        try:
            raise RuntimeError(REFUSED)
        except RuntimeError as inner:
            raise ValueError("the commit loop gave up") from inner
    except ValueError as outer:
        error = storage_input_error(outer, Table("s3://b/t"))
    assert error is not None and error.field == "aws_conn_id"
    assert "(InvalidAccessKeyId)" in error.message


def test_an_endpoint_that_does_not_answer_is_unreachable_not_bad_input() -> None:
    assert storage_input_error(RuntimeError(DOWN), Table("s3a://b/t")) is None
    assert storage_unreachable(RuntimeError(DOWN), Table("s3a://b/t")) == "the S3 endpoint of bucket 'b'"


@pytest.mark.parametrize("table", ["/data/t", "abfss://c@a.dfs.core.windows.net/t", "db.t"])
def test_other_storage_is_not_judged(table: str) -> None:
    for text in (NO_BUCKET, REFUSED, DOWN):
        assert storage_input_error(RuntimeError(text), Table(table)) is None
        assert storage_unreachable(RuntimeError(text), Table(table)) is None


def test_other_failures_on_s3_are_neither() -> None:
    other = RuntimeError("AnalysisException: cannot resolve column amount")
    assert (
        storage_input_error(other, Table("s3a://b/t")) is None
        and storage_unreachable(other, Table("s3a://b/t")) is None
    )
