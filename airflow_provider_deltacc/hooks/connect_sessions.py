"""Warm Spark Connect sessions, kept between the tasks of one machine.

A task's first Delta write in a new server-side session costs about half a second more than the same write in
a session that wrote before (the server builds the session's state and plans Delta's snapshot reads in it
anew; bench/README, ``latency.py``). So a session a task ends cleanly is not released: it is reset
(:func:`reset_for_next_task`) and kept here, and the next Connect task of this machine on the same server
takes it over instead of opening one.

The pool is a directory per server (the URL hashed: it may carry a token) holding one file per session:
``idle/<session id>`` when it waits for a task, ``held/<session id>@<pid>`` while a task holds it. A task
claims an idle session by renaming its file into ``held/``, which only one process can do, so no two tasks
ever share a session (its confs carry each task's txn identity and commit tag). A session comes back only
from a task that ended cleanly and reset it; the session of a task that died is never reused (the server may
still run its last operation): its file is swept once its process is gone, and the server drops the session
after its own idle timeout. A session idle longer than :data:`MAX_IDLE_S` is not taken (the server may have
dropped it; Spark's default timeout is 60 minutes).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from airflow_provider_deltacc.deployment.environment import CONNECT_SESSION_POOL_ENV

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

#: The longest a session waits in the pool before it is no longer handed out.
MAX_IDLE_S = 600.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionStart:
    """What a new session resolves names with, put back before the session is kept: its current catalog and
    database, and the temporary functions it starts with (Delta's extension registers ``table_changes``).

    :param catalog: ``current_catalog()``.
    :param database: ``current_database()``.
    :param functions: ``SHOW USER FUNCTIONS``.
    """

    catalog: str
    database: str
    functions: frozenset[str]

    @classmethod
    def of(cls, session: SparkSession) -> SessionStart:
        """The new session's catalog, database and functions, asked of the server.

        :param session: a new session on the server.
        """
        row = session.sql("SELECT current_catalog() AS c, current_database() AS d").collect()[0]
        return cls(catalog=str(row["c"]), database=str(row["d"]), functions=_user_functions(session))

    def to_json(self) -> str:
        """The record of a session file."""
        return json.dumps({"catalog": self.catalog, "db": self.database, "functions": sorted(self.functions)})

    @classmethod
    def from_json(cls, text: str) -> SessionStart:
        """Read :meth:`to_json`'s record.

        :param text: the record.
        :raises ValueError: it is not one.
        """
        try:
            recorded = json.loads(text)
            return cls(
                catalog=str(recorded["catalog"]),
                database=str(recorded["db"]),
                functions=frozenset(str(f) for f in recorded["functions"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a kept session's record: {exc}") from None


@dataclass(frozen=True)
class ClaimedSession:
    """A kept session, now held by this process.

    :param session_id: the server-side session id.
    :param start: what it resolved names with when it was new.
    """

    session_id: str
    start: SessionStart


def default_pool_dir() -> Path:
    """``DELTACC_CONNECT_SESSION_POOL_DIR``, else ``deltacc-connect-sessions-<uid>`` in the system's temporary
    directory."""
    configured = os.environ.get(CONNECT_SESSION_POOL_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"deltacc-connect-sessions-{os.getuid()}"


class SessionPool:
    """The kept sessions of one Connect server on this machine.

    :param url: the server's ``sc://`` URL as the connection gives it (user id and token included: a session
        belongs to its user).
    :param root: the directory of every server's pool; :func:`default_pool_dir` when None.
    :param max_idle_s: how long a session may wait and still be handed out.
    """

    def __init__(self, *, url: str, root: Path | None = None, max_idle_s: float = MAX_IDLE_S) -> None:
        server = hashlib.sha256(url.encode()).hexdigest()[:24]
        self.directory = (root or default_pool_dir()) / server
        self.max_idle_s = max_idle_s

    @property
    def _idle(self) -> Path:
        return self.directory / "idle"

    @property
    def _held(self) -> Path:
        return self.directory / "held"

    def _held_file(self, session_id: str) -> Path:
        return self._held / f"{session_id}@{os.getpid()}"

    def _ensure(self) -> None:
        for folder in (self._idle, self._held):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)

    def claim(self) -> ClaimedSession | None:
        """The most recently kept session, now held by this process; None when no session waits, or when
        the pool's directory cannot be used (logged: the task opens a new session).

        Sessions that waited too long and files that are not a kept session are removed on the way.
        """
        try:
            return self._claim()
        except OSError as exc:
            self._unusable(exc)
            return None

    def _claim(self) -> ClaimedSession | None:
        self._ensure()
        self._sweep_held()
        now = time.time()
        waiting: list[tuple[float, Path]] = []
        for path in self._idle.iterdir():
            try:
                waiting.append((path.stat().st_mtime, path))
            except FileNotFoundError:  # claimed by another process meanwhile
                continue
        for kept_at, path in sorted(waiting, reverse=True):
            if now - kept_at > self.max_idle_s or not _is_session_id(path.name):
                path.unlink(missing_ok=True)
                continue
            held = self._held_file(path.name)
            try:
                path.rename(held)
            except FileNotFoundError:  # another process claimed it first
                continue
            start = _read_start(held)
            if start is None:
                held.unlink(missing_ok=True)
                continue
            return ClaimedSession(path.name, start)
        return None

    def hold(self, session_id: str, start: SessionStart) -> bool:
        """Record a new session as held by this process; False when the pool's directory cannot be used
        (logged; the session is then released at the end, not kept).

        :param session_id: the session's id.
        :param start: what it resolves names with.
        """
        try:
            self._ensure()
            self._held_file(session_id).write_text(start.to_json())
        except OSError as exc:
            self._unusable(exc)
            return False
        return True

    def keep(self, session_id: str) -> bool:
        """Hand the session held by this process to the next task (the caller has reset it); False when the
        pool's directory cannot be used (logged; the caller releases the session).

        :param session_id: the session's id.
        """
        held = self._held_file(session_id)
        try:
            os.utime(held)  # its wait starts now; a rename keeps the time
            held.rename(self._idle / session_id)
        except OSError as exc:
            self._unusable(exc)
            self.drop(session_id)
            return False
        return True

    def drop(self, session_id: str) -> None:
        """Forget the session held by this process; it is never handed out again.

        :param session_id: the session's id.
        """
        try:
            self._held_file(session_id).unlink(missing_ok=True)
        except OSError:
            log.debug("could not forget Spark Connect session %s", session_id, exc_info=True)

    def _unusable(self, exc: OSError) -> None:
        log.warning(
            "the Spark Connect session pool %s cannot be used (%s: %s); sessions are not kept (set %s to a "
            "writable directory)",
            self.directory,
            type(exc).__name__,
            exc,
            CONNECT_SESSION_POOL_ENV,
        )

    def _sweep_held(self) -> None:
        """Remove the files of sessions whose holder's process is gone."""
        for path in self._held.iterdir():
            _, _, pid = path.name.rpartition("@")
            if not pid.isdigit() or not _alive(int(pid)):
                log.debug("forgetting Spark Connect session %s: its task is gone", path.name)
                path.unlink(missing_ok=True)


def _is_session_id(name: str) -> bool:
    try:
        return str(uuid.UUID(name, version=4)) == name
    except ValueError:
        return False


def _read_start(path: Path) -> SessionStart | None:
    try:
        return SessionStart.from_json(path.read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process of that id: it exists
        return True
    return True


def reset_for_next_task(session: SparkSession, start: SessionStart) -> None:
    """Leave ``session`` as a new session would be for the next task: every runtime setting back to the
    server's (``RESET``: the txn identity, the commit tag, Delta's note of the session's last commit,
    ``spark_conf``, and anything the task's own code set), the catalog and database of ``start`` current,
    and the temporary views and functions the task made dropped (a view named like a table would otherwise
    stand in for the table in the next task's SQL). Six round trips when the task made none.

    :param session: the session the task used.
    :param start: what it resolved names with when it was new.
    :raises Exception: whatever the server answered; the caller then releases the session instead.
    """
    session.sql("RESET")  # a command: it runs when sql() is called
    session.sql(f"USE {_quoted(start.catalog)}.{_quoted(start.database)}")
    for view in session.sql("SHOW VIEWS").collect():
        if view["isTemporary"] and not view["namespace"]:
            session.catalog.dropTempView(str(view["viewName"]))
    for function in _user_functions(session) - start.functions:
        if "." not in function:  # a persistent function is named with its catalog and database
            session.sql(f"DROP TEMPORARY FUNCTION IF EXISTS {_quoted(function)}")


def _user_functions(session: SparkSession) -> frozenset[str]:
    return frozenset(str(row[0]) for row in session.sql("SHOW USER FUNCTIONS").collect())


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
