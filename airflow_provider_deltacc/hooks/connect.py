"""Run a job spec as a thin client of a long-lived Spark Connect server.

The commit loop runs here, in the Airflow worker; every Delta operation reaches the server as SQL and
DataFrame calls over Connect (no py4j, no JVM objects). Each run holds a session of its own, so txn confs,
commit tags and ``spark_conf`` never leak between concurrent tasks. A run that ends cleanly resets its session
and keeps it warm for the machine's next Connect task on the server
(:mod:`~airflow_provider_deltacc.hooks.connect_sessions`; the connection's extra ``"session_reuse": false``
releases every session instead). The server needs the Delta jars and Delta's SQL extension and catalog;
nothing of this package is installed there.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlparse

from airflow.sdk import BaseHook

from airflow_provider_deltacc.contract.exit_codes import ExitCode
from airflow_provider_deltacc.exceptions import DeltaCCInfrastructureError, DeltaCCInputError
from airflow_provider_deltacc.hooks.connect_sessions import SessionPool, SessionStart, reset_for_next_task
from airflow_provider_deltacc.observability.secrets import connection_secrets, mask_values
from airflow_provider_deltacc.spark_jars.connect_mode import connect_session_keeping_mark

if TYPE_CHECKING:
    from airflow.sdk import Connection
    from pyspark.sql.connect.session import SparkSession

    from airflow_provider_deltacc.contract.spec import JobSpec
    from airflow_provider_deltacc.occ.commit_loop import Turns

CONNECT_CONN_TYPE = "spark_connect"
DEFAULT_CONNECT_PORT = 15002
#: How long the hook waits for a TCP connection to the Connect server before it gives up.
CONNECT_TIMEOUT_S = 5.0
#: How long the check of a server that may have gone away waits for it.
PROBE_TIMEOUT_S = 2.0
#: The connection extra that turns the keeping of warm sessions between tasks off (``false``).
SESSION_REUSE_EXTRA = "session_reuse"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenSession:
    """A run's session.

    :param session: the session.
    :param application: the server's Spark application id when the session opened (None: unknown).
    :param start: what it resolved names with when it was new; None when it is not to be kept.
    """

    session: SparkSession
    application: str | None
    start: SessionStart | None


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
    def _connection(self) -> Connection:
        """The ``spark_connect`` connection, its secrets masked in the task log."""
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
        return conn

    @cached_property
    def url(self) -> str:
        """The ``sc://`` URL as the apache-spark provider builds it (token, user id and ``use_ssl``), with the
        connection's ``x-`` header parameters (:func:`with_header_parameters`)."""
        from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

        conn = self._connection
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

    @cached_property
    def session_pool(self) -> SessionPool | None:
        """This machine's warm sessions on the connection's server; None when the connection's extra says
        ``"session_reuse": false``."""
        reuse = self._connection.extra_dejson.get(SESSION_REUSE_EXTRA, True)
        if isinstance(reuse, str) and reuse.strip().lower() in ("true", "false"):
            reuse = reuse.strip().lower() == "true"
        if not isinstance(reuse, bool):
            raise DeltaCCInputError(
                f"conn_id={self.conn_id!r}: extra {SESSION_REUSE_EXTRA}={reuse!r} is not a boolean; "
                f'set "{SESSION_REUSE_EXTRA}": true (keep sessions warm between tasks, the default) or false',
                field=f"conn_id.extra.{SESSION_REUSE_EXTRA}",
                value=reuse,
            )
        return SessionPool(url=self.url) if reuse else None

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
                unreachable=self.server_name,
            ) from None

    def open_session(self) -> OpenSession:
        """A session of this run's own on the connection's server: a warm one from :attr:`session_pool` when
        one waits there and still answers, else a new one (its own session id)."""
        self.check_reachable()
        host, port = self.address
        pool = self.session_pool
        claimed = pool.claim() if pool is not None else None
        if pool is not None and claimed is not None:
            session = new_connect_session(self.url, session_id=claimed.session_id)
            try:
                application = application_id(session)
            except Exception as exc:  # the server dropped it (its idle timeout, a release): not fatal
                log.info(
                    "kept Spark Connect session %s no longer answers (%s); opening a new one",
                    claimed.session_id,
                    type(exc).__name__,
                )
                pool.drop(claimed.session_id)
                release_quietly(session)
            else:
                log.info(
                    "Spark Connect session %s on %s:%s for %s (kept warm by an earlier task)",
                    session.session_id,
                    host,
                    port,
                    self.job_name,
                )
                return OpenSession(session, application, claimed.start)
        session = new_connect_session(self.url)
        application = server_application(session)
        start = None
        if pool is not None:
            try:
                start = SessionStart.of(session)
            except Exception:  # the server went away meanwhile: the job meets it, and says so; not kept
                log.debug("session %s: its catalog and functions unread", session.session_id, exc_info=True)
            else:
                if not pool.hold(session.session_id, start):
                    start = None
        log.info("Spark Connect session %s on %s:%s for %s", session.session_id, host, port, self.job_name)
        return OpenSession(session, application, start)

    def close_session(self, opened: OpenSession, *, clean: bool) -> None:
        """Keep the run's session warm for the next task when the run ended ``clean`` and the session could be
        reset (:func:`~airflow_provider_deltacc.hooks.connect_sessions.reset_for_next_task`); release it
        otherwise.

        :param opened: the run's session.
        :param clean: the job returned (whatever its outcome) and the session was not lost.
        """
        session, pool = opened.session, self.session_pool
        if pool is None or opened.start is None:
            release_quietly(session)
            return
        if clean:
            try:
                reset_for_next_task(session, opened.start)
            except Exception:  # a session that cannot be reset is not handed on
                log.info("Spark Connect session %s could not be reset; released", session.session_id)
                log.debug("reset of session %s", session.session_id, exc_info=True)
            else:
                if pool.keep(session.session_id):
                    session.release_session_on_close = False  # close the channel only; the server keeps it
                    release_quietly(session)
                    return
        pool.drop(session.session_id)
        release_quietly(session)

    @property
    def server_name(self) -> str:
        """The server as a retry reason names it: ``Spark Connect server host:port (conn_id='...')``."""
        host, port = self.address
        return f"Spark Connect server {host}:{port} (conn_id={self.conn_id!r})"

    def run(self, spec: JobSpec, *, turns: Turns | None = None) -> tuple[int, dict[str, Any]]:
        """Run ``spec`` in a session of its own, then keep the session warm or release it
        (:meth:`close_session`).

        A run whose server went away (killed, restarted by its supervisor, or unreachable) fails as
        infrastructure naming the connection and the server, however the client saw it (see
        :mod:`~airflow_provider_deltacc.spark_job.unavailable`); a closed session is the server's loss only
        when the server says so (:meth:`server_went_away`).

        :param spec: the job spec, ``spark_conf`` already merged.
        :raises DeltaCCInfrastructureError: the server went away while the job ran.
        """
        from airflow_provider_deltacc.spark_job.main import run_job

        opened = self.open_session()
        session, application = opened.session, opened.application
        self._session = session
        try:
            # The engine is typed against the classic session; a Connect session offers what it calls.
            code, report = run_job(spec, cast(Any, session), turns=turns)
        except BaseException:
            self.close_session(opened, clean=False)
            raise
        finally:
            self._session = None
        error = report.get("error") or {}
        self.close_session(opened, clean=code != ExitCode.UNAVAILABLE and not error.get("session_lost"))
        gone = None
        if code == ExitCode.UNAVAILABLE and str(error.get("unreachable", "")).startswith("Spark Connect"):
            gone = str(error["unreachable"]).removeprefix("Spark Connect server ").strip("()")
        elif code == ExitCode.FAILURE and error.get("session_lost"):
            gone = self.server_went_away(application, str(error["session_lost"]))
        if gone is not None:
            raise self.server_lost(session.session_id, gone, report)
        return code, report

    def server_went_away(self, application: str | None, closed: str) -> str | None:
        """Whether the server of a session that was closed under the job (``closed``: ``NO_ACTIVE_SESSION``
        ...) went away, asked of the server itself: it does not answer now, or it answers as another Spark
        application than the one the session began on (it was restarted). A server that still runs the same
        application did not go away: the session was closed by the job's own code, and the failure stays the
        job's.

        :param application: the server's ``spark.app.id`` when the session opened (None: unknown).
        :param closed: how the job saw its session closed.
        :returns: what happened, for the reason; None when the server did not go away.
        """
        try:
            self.check_reachable(timeout_s=PROBE_TIMEOUT_S)
        except DeltaCCInfrastructureError:
            return f"{closed}; the server does not answer"
        if application is None:
            return None  # nothing to compare with: the session's loss is not known to be the server's
        try:
            probe = new_connect_session(self.url)
        except Exception as exc:  # the server answers TCP but not Spark Connect
            return f"{closed}; the server does not answer Spark Connect ({type(exc).__name__})"
        try:
            now = server_application(probe)
        finally:
            release_quietly(probe)
        if now is None or now == application:
            return None
        return f"{closed}; the server was restarted (Spark application {application}, now {now})"

    def server_lost(self, session_id: str, what: str, report: dict[str, Any]) -> DeltaCCInfrastructureError:
        """The error of a run whose server went away: the connection, the server, how the client saw it, and
        whether a retry is safe (its txn identity).

        :param session_id: the run's session.
        :param what: how the loss showed, e.g. ``gRPC UNAVAILABLE``.
        :param report: the job's report.
        """
        first = str((report.get("error") or {}).get("message") or "").strip().splitlines()
        if report.get("txn_app_id") is not None:
            retry = (
                "A retry is safe: its txn identity keeps it from writing twice if the lost write committed."
            )
        else:
            retry = "This job has no txn identity: if the lost operation committed, a retry writes again."
        host, port = self.address
        # What the reason needs comes first: Airflow keeps only the head of a retry reason.
        return DeltaCCInfrastructureError(
            f"conn_id={self.conn_id!r}: the Spark Connect server {host}:{port} went away while the job ran "
            f"({what}). {retry} Run the server under a supervisor that starts it again (docs/deployment.md). "
            f"Session {session_id}{': ' + first[0][:300] if first else ''}",
            unreachable=self.server_name,
            report=report,
        )

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
    return with_url_parameters(url, headers)


def with_url_parameters(url: str, parameters: list[str]) -> str:
    """``url`` with ``parameters`` (``key=value``, already quoted) after the ones it has.

    :param url: an ``sc://host:port`` URL, with or without ``/;`` parameters.
    :param parameters: the parameters to add.
    """
    if not parameters:
        return url
    head, _, params = url.partition("/;")
    base = head if params else url.rstrip("/")
    return f"{base}/;" + ";".join([*([params] if params else []), *parameters])


def server_application(session: SparkSession) -> str | None:
    """The server's Spark application id (``spark.app.id``): a restarted server runs another one. None when
    the server does not tell (a managed endpoint may refuse the setting).

    :param session: a session on the server.
    """
    try:
        return application_id(session)
    except Exception:  # refused, or the server went away: unknown
        log.debug("the Spark Connect server does not tell its spark.app.id", exc_info=True)
        return None


def application_id(session: SparkSession) -> str | None:
    """The server's ``spark.app.id`` (None when empty); whatever the server answered otherwise is raised.

    :param session: a session on the server.
    """
    return session.conf.get("spark.app.id", None) or None


def release_quietly(session: SparkSession) -> None:
    """Stop ``session``: release it on the server (unless told not to) and close its channel; a server that is
    gone has nothing left to release.

    :param session: a session.
    """
    try:
        session.stop()
    except Exception:  # the server may be gone; the session dies with it
        log.debug("could not release Spark Connect session %s", session.session_id, exc_info=True)


def new_connect_session(url: str, *, session_id: str | None = None) -> SparkSession:
    """A Spark Connect session on the server at ``url``: a new one (a session id of its own), or the
    server-side session ``session_id`` (a kept session; the server makes it anew if it never had it).

    pyspark marks the whole process as a Spark Connect client when it creates one
    (``SPARK_CONNECT_MODE_ENABLED``); the mark is put back as it was, so a classic session can still start in
    the same process. The engine holds the mark while an operation runs on the session, so the user's
    ``pyspark.sql.functions`` and UDFs run as Spark Connect code
    (:mod:`airflow_provider_deltacc.spark_jars.connect_mode`).

    :param url: an ``sc://`` URL.
    :param session_id: the session to take over; None for a new one.
    """
    from pyspark.sql.connect.session import SparkSession

    if session_id is not None:
        url = with_url_parameters(url, [f"session_id={session_id}"])
    return connect_session_keeping_mark(SparkSession.builder.remote(url).create)
