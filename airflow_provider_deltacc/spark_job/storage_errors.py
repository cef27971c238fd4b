"""Recognise object-store failures in the job: a bucket that does not exist and refused credentials are the
input's fault (retrying cannot help); a store that cannot be reached is infrastructure (Airflow retries).

Spark reports them as JVM exceptions (through py4j, or as Spark Connect errors quoting the JVM's class
names), so they are recognised by the names and S3 error codes in their text. Nothing here imports pyspark.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from airflow_provider_deltacc.contract.exceptions import InputError
from airflow_provider_deltacc.contract.storage_safety import S3_SCHEMES
from airflow_provider_deltacc.contract.table import Table
from airflow_provider_deltacc.spark_job.unavailable import exception_chain

_NO_BUCKET = ("UnknownStoreException", "NoSuchBucket")
_REFUSED = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "NoAuthWithAWSException",
    "AccessDeniedException",
    "ExpiredToken",
    "InvalidToken",
)
_UNREACHABLE = (
    "Unable to execute HTTP request",
    "Connection refused",
    "ConnectException",
    "UnknownHostException",
    "ConnectTimeoutException",
)


def storage_input_error(exc: BaseException, table: Table) -> InputError | None:
    """The bad input ``exc`` reports about the table's storage, or None.

    :param exc: what the job caught.
    :param table: the job's table.
    """
    text = _text(exc)
    bucket = urlsplit(table.name).netloc
    if table.scheme not in S3_SCHEMES or not bucket:
        return None
    if any(marker in text for marker in _NO_BUCKET):
        return InputError(
            "table",
            table.name,
            f"the bucket {bucket!r} does not exist on the S3 endpoint; create it, or fix the table",
        )
    if any(marker in text for marker in _REFUSED):
        code = next(marker for marker in _REFUSED if marker in text)
        return InputError(  # the job does not know the connection's name; the hook puts it in
            "aws_conn_id",
            None,
            f"S3 refused the credentials for bucket {bucket!r} ({code}): check the keys, token and region of "
            "the task's aws_conn_id connection (or the fs.s3a settings it runs with)",
        )
    return None


def storage_unreachable(exc: BaseException, table: Table) -> str | None:
    """What could not be reached, when ``exc`` says the table's object store did not answer; else None.

    :param exc: what the job caught.
    :param table: the job's table.
    """
    if table.scheme not in S3_SCHEMES:
        return None
    text = _text(exc)
    if any(marker in text for marker in _UNREACHABLE):
        return f"the S3 endpoint of bucket {urlsplit(table.name).netloc!r}"
    return None


def _text(exc: BaseException) -> str:
    return "\n".join(str(node) for node in exception_chain(exc))
