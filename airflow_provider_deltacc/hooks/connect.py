"""Run a job spec as a thin client of a long-lived Spark Connect server.

The commit loop runs here, in the Airflow worker; every Delta operation reaches the server as SQL and
DataFrame calls over Connect (no py4j, no JVM objects). Each run gets a session of its own (a new session id),
so txn confs, commit tags and ``spark_conf`` never leak between concurrent tasks; the session is released
when the run ends. The server needs the Delta jars and Delta's SQL extension and catalog; nothing of this
package is installed there.
"""

from __future__ import annotations

import logging
import socket
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlparse

from airflow.sdk import BaseHook

from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.hooks.secrets import connection_secrets, mask_values
from airflow_provider_deltacc.spark_jars.connect_mode import connect_session_keeping_mark

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

    from airflow_provider_deltacc.contract.spec import JobSpec
    from airflow_provider_deltacc.occ.commit_loop import Turns

CONNECT_CONN_TYPE = "spark_connect"
DEFAULT_CONNECT_PORT = 15002
#: How long the hook waits for a TCP connection to the Connect server before it gives up.
CONNECT_TIMEOUT_S = 5.0

log = logging.getLogger(__name__)


class SparkConnectRunner:
    """Run one job spec over a Spark Connect session of its own.

    :param conn_id: a ``spark_connect`` connection (host, port, user id, token, ``use_ssl``), read with
        the apache-spark provider's ``SparkConnectHook``.
    :param job_name: a name for the run, logged with the session id.
    """

    def __init__(self, *, conn_id: str, job_name: str) -> None:
        self.conn_id = conn_id
        self.job_name = job_name
        self._session: SparkSession | None = None

    @cached_property
    def url(self) -> str:
        """The ``sc://`` URL as the apache-spark provider builds it (token, user id and ``use_ssl``), with the
        connection's ``x-`` header parameters (:func:`with_header_parameters`)."""
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        try:
            conn = BaseHook.get_connection(self.conn_id)
        except Exception as exc:  # AirflowNotFoundException, or a secrets backend error
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: no such Airflow connection. Create a 'spark_connect' connection, "
                f"e.g. AIRFLOW_CONN_{self.conn_id.upper()}='spark-connect://host:{DEFAULT_CONNECT_PORT}'",
                field="conn_id",
                value=self.conn_id,
            ) from exc
        if conn.conn_type != CONNECT_CONN_TYPE:
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r} is a {conn.conn_type!r} connection; "
                "execution_mode='spark_connect' needs a 'spark_connect' connection "
                f"(e.g. 'spark-connect://host:{DEFAULT_CONNECT_PORT}'). "
                "Use execution_mode='spark_submit' for a 'spark' connection.",
                field="conn_id",
                value=self.conn_id,
            )
        mask_values(connection_secrets(conn))
        try:
            return with_header_parameters(
                SparkConnectHook(conn_id=self.conn_id).get_connection_url(), conn.extra_dejson
            )
        except (ValueError, TypeError) as exc:
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: the apache-spark provider cannot build a Spark Connect URL from "
                f"this connection: {exc}",
                field="conn_id",
                value=self.conn_id,
            ) from None

    @property
    def address(self) -> tuple[str, int]:
        """The server's host and port (15002 when the connection names none)."""
        parsed = urlparse(self.url)
        return parsed.hostname or "localhost", parsed.port or DEFAULT_CONNECT_PORT

    def check_reachable(self, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        """Fail fast when the server refuses connections or does not answer within ``timeout_s`` (the Connect
        client itself would retry for minutes).

        :param timeout_s: the longest wait for one TCP connection.
        :raises DeltaCCInfrastructureError: naming ``conn_id`` and the host.
        """
        host, port = self.address
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as exc:
            raise DeltaCCInfrastructureError(
                f"conn_id={self.conn_id!r}: the Spark Connect server {host}:{port} cannot be reached "
                f"({type(exc).__name__}: {exc}). Start the server, or fix the connection's host and port.",
                unreachable=f"Spark Connect server {host}:{port} (conn_id={self.conn_id!r})",
            ) from None

    def open_session(self) -> SparkSession:
        """A new Connect session (its own session id) on the connection's server."""
        self.check_reachable()
        session = new_connect_session(self.url)
        host, port = self.address
        log.info("Spark Connect session %s on %s:%s for %s", session.session_id, host, port, self.job_name)
        return session

    def run(
        self, spec: JobSpec | dict[str, Any], *, turns: Turns | None = None
    ) -> tuple[int, dict[str, Any]]:
        """Run ``spec`` in a session of its own and release the session afterwards.

        :param spec: the job spec, ``spark_conf`` already merged.
        """
        from airflow_provider_deltacc.spark_job.main import run_job

        session = self.open_session()
        self._session = session
        try:
            # The engine is typed against the classic session; a Connect session offers what it calls.
            return run_job(spec, cast(Any, session), turns=turns)
        finally:
            self._session = None
            try:
                session.stop()
            except Exception:  # the server may be gone; the session dies with it
                log.debug("could not release Spark Connect session %s", session.session_id, exc_info=True)

    def on_kill(self) -> None:
        """Interrupt every operation the session is running on the server."""
        session = self._session
        if session is not None:
            session.interruptAll()


def with_header_parameters(url: str, extra: dict[str, Any]) -> str:
    """``url`` with the connection extra's keys that start with ``x-`` as Spark Connect URL parameters.

    Spark Connect sends a URL parameter it does not know as a gRPC header on every request; a Databricks
    cluster's endpoint is chosen by one, ``x-databricks-cluster-id`` (with the workspace as host, port 443,
    the personal access token as the connection's password and ``use_ssl``). The apache-spark provider's URL
    carries only the user id, the token and ``use_ssl``.

    :param url: the provider's ``sc://host:port/;...`` URL.
    :param extra: the connection's extra.
    """
    headers = [
        f"{quote(str(key))}={quote(str(value))}"
        for key, value in sorted(extra.items())
        if isinstance(key, str) and key.lower().startswith("x-") and value is not None
    ]
    if not headers:
        return url
    head, _, params = url.partition("/;")
    base = head if params else url.rstrip("/")
    return f"{base}/;" + ";".join([*([params] if params else []), *headers])


def new_connect_session(url: str) -> SparkSession:
    """A new Spark Connect session (a session id of its own) on the server at ``url``.

    pyspark marks the whole process as a Spark Connect client when it creates one
    (``SPARK_CONNECT_MODE_ENABLED``); the mark is put back as it was, so a classic session can still start in
    the same process. The engine holds the mark while an operation runs on the session, so the user's
    ``pyspark.sql.functions`` and UDFs run as Spark Connect code
    (:mod:`airflow_provider_deltacc.spark_jars.connect_mode`).

    :param url: an ``sc://`` URL.
    """
    from pyspark.sql.connect.session import SparkSession

    return connect_session_keeping_mark(SparkSession.builder.remote(url).create)
