"""A real Airflow 3.3 for tests: a PostgreSQL metadata database, the scheduler, the dag-processor, the
triggerer and the api-server on 127.0.0.1, each a process of its own; the scheduler runs tasks with the
LocalExecutor, or with the CeleryExecutor on a Celery worker per "host" (:class:`CeleryOptions`).

Registered in the root conftest's ``pytest_plugins``. A test module asks for ``airflow_stack`` and overrides
``airflow_stack_options`` (a module-scoped fixture) to give the stack its environment (connections, provider
settings) or to start fewer components::

    @pytest.fixture(scope="module")
    def airflow_stack_options(spark_connect_server: ConnectServer) -> StackOptions:
        return StackOptions(env={"AIRFLOW_CONN_SPARK_CONNECT_DEFAULT": spark_connect_server.conn_uri})

The stack has its own ``AIRFLOW_HOME`` and dags folder (empty: the test puts its DAG files there), its own
database on the test PostgreSQL server, a known admin user (simple auth manager) and a JWT secret. Every
process writes its output to ``<home>/logs/<component>.log``.

With :class:`CeleryOptions`, each host (a loopback address such as 127.0.0.2, see :mod:`tests.support.hosts`)
gets a directory of its own under ``hosts/<address>/`` (its working directory, temporary files and task
logs), a Celery worker and a log server bound to its address; task instances record the host they ran on,
and the api-server reads their logs from it. :meth:`AirflowStack.kill_host` takes a host down at once.

Nothing outlives the fixture: each component runs in a process group of its own, and every process started
with the stack's environment (task processes put themselves in groups of their own) carries a marker
variable by which teardown finds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.hosts import HOST_ENV, HOSTNAME_CALLABLE
from tests.support.postgres import scratch_database
from tests.support.spark_standalone import _free_port, _wait_for_log

AIRFLOW = Path(sys.executable).with_name("airflow")
ROOT = Path(__file__).resolve().parents[2]

#: Every component, in the order they start (the api-server also serves the tasks' execution API).
COMPONENTS = ("api-server", "dag-processor", "scheduler", "triggerer")
#: Stopped in this order: nothing schedules new work while the rest goes down.
_STOP_ORDER = ("scheduler", "triggerer", "dag-processor", "api-server")
#: The health endpoint's name of each component it reports on.
_HEALTH_KEYS = {"dag-processor": "dag_processor", "triggerer": "triggerer"}
#: The components that start a log server of their own unless told not to.
_SERVES_LOGS = frozenset({"scheduler", "triggerer"})
#: The variable every process of one stack carries (task processes included), with the stack's id.
MARKER_ENV = "DELTACC_AIRFLOW_STACK"

ADMIN_USER = "admin"
#: Run states after which a run changes no more.
FINISHED_RUN_STATES = frozenset({"success", "failed"})


@dataclass(frozen=True)
class CeleryOptions:
    """Run tasks with the CeleryExecutor: one Celery worker on each host.

    :param broker_url: the broker's URL (``redis://127.0.0.1:<port>/0``, :mod:`tests.support.redis_server`).
    :param hosts: the hosts' loopback addresses, one worker each; not 127.0.0.1 (the stack's own).
    :param concurrency: the tasks each worker runs at once.
    """

    broker_url: str
    hosts: tuple[str, ...] = ("127.0.0.2", "127.0.0.3")
    concurrency: int = 4

    def __post_init__(self) -> None:
        for host in self.hosts:
            parts = host.split(".")
            if len(parts) != 4 or parts[0] != "127" or host == "127.0.0.1":
                raise ValueError(
                    f"hosts={self.hosts!r}: {host!r} is not a loopback address other than 127.0.0.1"
                )
        if len(set(self.hosts)) != len(self.hosts) or not self.hosts:
            raise ValueError(f"hosts={self.hosts!r}: give one or more distinct addresses")


@dataclass(frozen=True)
class StackOptions:
    """What a test asks of the stack.

    :param env: extra environment for every component and task (``AIRFLOW_CONN_*``, ``DELTACC_*``,
        ``AIRFLOW__SECTION__KEY`` overrides).
    :param components: the components to start; the api-server is needed whenever tasks run (they reach
        the metadata through its execution API).
    :param parallelism: the LocalExecutor's task slots (``[core] parallelism``).
    :param start_timeout_s: how long ``airflow db migrate`` and then the components' start may take each.
    :param celery: run tasks on Celery workers on these hosts instead of the LocalExecutor.
    """

    env: Mapping[str, str] = field(default_factory=dict)
    components: tuple[str, ...] = COMPONENTS
    parallelism: int = 8
    start_timeout_s: float = 600.0
    celery: CeleryOptions | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.components) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"components={unknown} are not Airflow components; use some of {COMPONENTS}")


@dataclass(frozen=True)
class TaskState:
    """A task instance as the REST API shows it."""

    task_id: str
    map_index: int
    state: str | None
    try_number: int
    pid: int | None
    start_date: str | None
    end_date: str | None
    hostname: str | None = None

    @property
    def label(self) -> str:
        """``task`` or ``task[2]``."""
        return self.task_id if self.map_index < 0 else f"{self.task_id}[{self.map_index}]"

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> TaskState:
        return cls(
            task_id=str(data["task_id"]),
            map_index=int(data["map_index"]),
            state=data.get("state"),
            try_number=int(data["try_number"]),
            pid=data.get("pid"),
            start_date=data.get("start_date"),
            end_date=data.get("end_date"),
            hostname=data.get("hostname") or None,
        )


class RunDidNotSucceed(AssertionError):
    """A DAG run failed or did not finish in time; the message has its task states and the logs' tails."""


def stack_environment(
    *, home: Path, dags: Path, database_url: str, api_port: int, marker: str
) -> dict[str, str]:
    """The environment of every process of a stack: this process's, less any Airflow setting of the test
    session (its SQLite ``AIRFLOW_HOME``, unit-test mode, connections), plus the stack's own settings.

    :param home: the stack's ``AIRFLOW_HOME``.
    :param dags: its dags folder.
    :param database_url: the SQLAlchemy URL of its metadata database.
    :param api_port: the api-server's port on 127.0.0.1.
    :param marker: the stack's id, in :data:`MARKER_ENV`.
    """
    from cryptography.fernet import Fernet

    inherited = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW_", "PYTEST_")) and key != MARKER_ENV
    }
    api = f"http://127.0.0.1:{api_port}"
    return {
        **inherited,
        "PATH": f"{AIRFLOW.parent}{os.pathsep}{inherited.get('PATH', '')}",
        "SPARK_LOCAL_IP": inherited.get("SPARK_LOCAL_IP", "127.0.0.1"),
        MARKER_ENV: marker,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url,
        "AIRFLOW__CORE__AUTH_MANAGER": (
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
        ),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_urlsafe(32),
        "AIRFLOW__API__SECRET_KEY": secrets.token_urlsafe(32),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(api_port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API__BASE_URL": api,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}/execution/",
        # Log servers on ports of their own (the defaults would clash with other stacks'); only the Celery
        # hosts' run (the scheduler and the triggerer start theirs on every interface: they are skipped).
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(_free_port()),
        # A 2-core box that runs other work too: parse slowly-importing files without timing out, see new
        # files within seconds, one parsing process.
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
        "AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT": "180",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
    }


def _marked_pids(marker: str) -> list[int]:
    """The processes whose environment carries this stack's marker (this one's never does)."""
    needle = f"{MARKER_ENV}={marker}\0".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if needle in environ.read_bytes():
                found.append(int(environ.parent.name))
    return [pid for pid in found if pid != os.getpid()]


def _descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them (by parent pid), those still running."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, pending = [], list(roots)
    while pending:
        pid = pending.pop()
        if pid not in found and Path(f"/proc/{pid}").exists():
            found.append(pid)
            pending.extend(children.get(pid, []))
    return found


def _tail(path: Path, lines: int) -> str:
    if not path.exists():
        return f"({path} does not exist)"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


class AirflowStack:
    """Airflow's processes for one test module, and what a test does with them through the REST API.

    :param work: an empty directory: ``home/`` (``AIRFLOW_HOME``, logs), ``dags/`` (the dags folder).
    :param database_url: the SQLAlchemy URL of an empty PostgreSQL database for the metadata.
    :param options: what to start and with which environment.
    """

    def __init__(self, *, work: Path, database_url: str, options: StackOptions) -> None:
        self.options = options
        self.home = work / "home"
        self.dags_folder = work / "dags"
        self.logs = self.home / "logs"
        for folder in (self.home, self.dags_folder, self.logs):
            folder.mkdir(parents=True, exist_ok=True)
        self.marker = uuid.uuid4().hex
        self.port = _free_port()
        self.api_url = f"http://127.0.0.1:{self.port}"
        self.username = ADMIN_USER
        self.password = secrets.token_urlsafe(16)
        self.env = {
            **stack_environment(
                home=self.home,
                dags=self.dags_folder,
                database_url=database_url,
                api_port=self.port,
                marker=self.marker,
            ),
            "AIRFLOW__CORE__PARALLELISM": str(options.parallelism),
            **(self._celery_env(database_url, options.celery) if options.celery else {}),
            **options.env,
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started_at: dict[str, datetime] = {}
        self._token: str | None = None

    def _celery_env(self, database_url: str, celery: CeleryOptions) -> dict[str, str]:
        from sqlalchemy import make_url

        results = make_url(database_url).set(drivername="postgresql+psycopg2")
        return {
            "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
            "AIRFLOW__CELERY__BROKER_URL": celery.broker_url,
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{results.render_as_string(hide_password=False)}",
            "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(celery.concurrency),
            # Task instances record the host their worker runs on; the api-server reads their logs there.
            "AIRFLOW__CORE__HOSTNAME_CALLABLE": HOSTNAME_CALLABLE,
            "PYTHONPATH": str(ROOT),
        }

    # -- processes ---------------------------------------------------------------------------------------
    @property
    def hosts(self) -> tuple[str, ...]:
        """The Celery hosts (none under the LocalExecutor)."""
        return self.options.celery.hosts if self.options.celery else ()

    def host_dir(self, host: str) -> Path:
        """A host's own directory: its working directory, ``tmp/`` and task ``logs/``."""
        return self.home.parent / "hosts" / host

    def host_env(self, host: str) -> dict[str, str]:
        """The environment of the processes on ``host``."""
        folder = self.host_dir(host)
        return {
            **self.env,
            HOST_ENV: host,
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(folder / "logs"),
            "TMPDIR": str(folder / "tmp"),
            "SPARK_LOCAL_IP": host,
        }

    def log_path(self, name: str) -> Path:
        """Where a component's (or a CLI command's) output goes."""
        return self.logs / f"{name}.log"

    def migrate(self, *, migration_files: bool = False) -> None:
        """``airflow db migrate`` on the empty metadata database; write the admin's password file.

        :param migration_files: build the schema with Airflow's migration scripts, as a database upgraded
            from an older Airflow has it (``--use-migration-files``); by default an empty database gets the
            ORM models' tables (``create_all``) stamped with the head revision, as a new deployment does.
        """
        (self.home / "passwords.json").write_text(json.dumps({self.username: self.password}))
        files = ["--use-migration-files"] if migration_files else []
        result = self.cli("db", "migrate", *files, timeout_s=self.options.start_timeout_s)
        if result.returncode != 0:
            raise RuntimeError(f"airflow db migrate failed:\n{result.stdout[-3000:]}")

    def start_component(self, name: str) -> subprocess.Popen[bytes]:
        """Start one component in a process group of its own, its output appended to its log."""
        if name not in COMPONENTS:
            raise ValueError(f"{name!r} is not one of {COMPONENTS}")
        running = self.processes.get(name)
        if running is not None and running.poll() is None:
            raise RuntimeError(f"{name} is already running (pid {running.pid})")
        # Airflow's log servers bind every interface; the tests keep to loopback addresses. Task logs are read
        # from the log folder here, or from a Celery host's own log server (see start_host).
        skip = ["--skip-serve-logs"] if name in _SERVES_LOGS else []
        return self._spawn(name, [str(AIRFLOW), name, *skip], env=self.env, cwd=self.home)

    def _spawn(
        self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path
    ) -> subprocess.Popen[bytes]:
        with self.log_path(name).open("ab") as log:
            log.write(f"--- {name} started by the test at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True
            )
        self.processes[name] = process
        self.started_at[name] = datetime.now(UTC)
        return process

    def start_host(self, host: str, timeout_s: float = 180.0) -> None:
        """Start ``host``'s log server and Celery worker (``worker@<host>``); return once the worker is ready.

        :raises RuntimeError: when the stack runs no Celery workers, or the worker exits while starting.
        """
        celery = self.options.celery
        if celery is None or host not in self.hosts:
            raise RuntimeError(f"{host} is not a Celery host of this stack ({celery})")
        folder = self.host_dir(host)
        for sub in ("logs", "tmp"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        env = self.host_env(host)
        port = self.env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"]
        self._spawn(
            f"log-server@{host}",
            [sys.executable, "-m", "tests.support.hosts", host, port],
            env=env,
            cwd=folder,
        )
        worker = f"celery-worker@{host}"
        process = self._spawn(
            worker,
            [str(AIRFLOW), "celery", "worker", "--celery-hostname", f"worker@{host}",
             "--concurrency", str(celery.concurrency), "--skip-serve-logs"],
            env=env,
            cwd=folder,
        )  # fmt: skip
        _wait_for_log(self.log_path(worker), f"worker@{host} ready", process, timeout_s)

    def kill_host(self, host: str) -> list[int]:
        """SIGKILL every process on ``host`` at once (its worker, the worker's task processes and their Spark
        drivers, its log server), as a machine that is lost; returns their pids.

        They are found as the descendants of the host's worker and log server: the worker's processes name
        themselves with ``setproctitle``, which overwrites the environment ``/proc`` shows, so no marker
        variable can find them.
        """
        names = [name for name in (f"celery-worker@{host}", f"log-server@{host}") if name in self.processes]
        roots = [self.processes[name].pid for name in names]
        killed: list[int] = []
        for _ in range(20):  # a process forked while its parent was being killed is caught the next round
            alive = [pid for pid in _descendants(roots) if pid not in killed]
            if not alive:
                break
            for pid in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed += alive
        for name in names:
            self.processes[name].wait(timeout=30)
        return killed

    def kill_component(
        self, name: str, sig: signal.Signals = signal.SIGKILL, timeout_s: float = 60.0
    ) -> None:
        """Signal a component's process group and wait for the component to exit (SIGKILL after the timeout).

        Task processes the component started are in groups of their own and are not signalled.
        """
        process = self.processes[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def start(self) -> None:
        """Migrate, start the components asked for, and wait until each is up."""
        self.migrate()
        for name in COMPONENTS:
            if name in self.options.components:
                self.start_component(name)
        self.wait_ready(self.options.components, self.options.start_timeout_s)
        for host in self.hosts:
            self.start_host(host)

    def stop(self) -> None:
        """SIGTERM each component's group (scheduler first), SIGKILL what is left, then every process on a
        Celery host (:meth:`kill_host`) and every process that still carries the stack's marker (task
        processes, their children)."""
        for name in _STOP_ORDER:
            if name in self.processes:
                self.kill_component(name, signal.SIGTERM, timeout_s=30)
        for host in self.hosts:
            if f"celery-worker@{host}" in self.processes:
                self.kill_host(host)
        deadline = time.monotonic() + 30
        while (stragglers := _marked_pids(self.marker)) and time.monotonic() < deadline:
            for pid in stragglers:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        if stragglers:
            raise RuntimeError(f"processes of the Airflow stack survived SIGKILL: {stragglers}")

    def cli(self, *args: str, timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
        """Run ``airflow <args>`` with the stack's environment; stdout and stderr together in ``stdout``."""
        return subprocess.run(
            [str(AIRFLOW), *args],
            env=self.env,
            cwd=self.home,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout_s,
            check=False,
        )

    # -- readiness ---------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any] | None:
        """The api-server's health report, or None while it does not answer."""
        import httpx

        try:
            response = httpx.get(f"{self.api_url}/api/v2/monitor/health", timeout=10)
        except httpx.HTTPError:
            return None
        return response.json() if response.status_code == 200 else None

    def scheduler_alive(self) -> bool:
        """``airflow jobs check --job-type SchedulerJob``: the newest scheduler job is heartbeating."""
        return self.cli("jobs", "check", "--job-type", "SchedulerJob", timeout_s=120).returncode == 0

    def _scheduler_is_new(self, health: dict[str, Any] | None) -> bool:
        """After a restart, whether the newest scheduler heartbeat is the new process's (a killed
        scheduler's job looks alive until its heartbeat is too old). True when there is no api-server."""
        if "api-server" not in self.processes:
            return True
        beat = ((health or {}).get("scheduler") or {}).get("latest_scheduler_heartbeat")
        return beat is not None and datetime.fromisoformat(beat) > self.started_at["scheduler"]

    def wait_ready(self, names: tuple[str, ...] | list[str], timeout_s: float) -> None:
        """Poll until every named component is up: the api-server answers its health endpoint with a healthy
        metadatabase, the dag-processor and the triggerer report healthy there, and ``airflow jobs check``
        finds the scheduler alive. Fails at once when a component exits, with its log's tail."""
        pending = set(names)
        deadline = time.monotonic() + timeout_s
        while pending:
            for name in sorted(pending):
                process = self.processes[name]
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {process.returncode} while starting:\n"
                        f"{_tail(self.log_path(name), 60)}"
                    )
            health = self.health()
            if health is not None and health.get("metadatabase", {}).get("status") == "healthy":
                pending.discard("api-server")
                for name, key in _HEALTH_KEYS.items():
                    if (health.get(key) or {}).get("status") == "healthy":
                        pending.discard(name)
            if "scheduler" in pending and self._scheduler_is_new(health) and self.scheduler_alive():
                pending.discard("scheduler")
            if not pending:
                return
            if time.monotonic() > deadline:
                tails = "\n".join(f"== {n}\n{_tail(self.log_path(n), 30)}" for n in sorted(pending))
                raise TimeoutError(f"not up within {timeout_s:.0f} s: {sorted(pending)}\n{tails}")
            time.sleep(2)

    # -- REST API ----------------------------------------------------------------------------------------
    def token(self) -> str:
        """A JWT for the admin user from the simple auth manager's ``/auth/token``."""
        import httpx

        if self._token is None:
            response = httpx.post(
                f"{self.api_url}/auth/token",
                json={"username": self.username, "password": self.password},
                timeout=30,
            )
            response.raise_for_status()
            self._token = str(response.json()["access_token"])
        return self._token

    def api(self, method: str, path: str, *, json_body: Any = None, ok: tuple[int, ...] = (200,)) -> Any:
        """Call ``/api/v2<path>`` as the admin; the decoded JSON, or an AssertionError with the response.

        :param method: ``GET``, ``POST``, ``PATCH`` ...
        :param path: e.g. ``/dags/my_dag``.
        :param json_body: the request's JSON body.
        :param ok: the status codes that are success.
        """
        import httpx

        response = httpx.request(
            method,
            f"{self.api_url}/api/v2{path}",
            json=json_body,
            headers={"Authorization": f"Bearer {self.token()}"},
            timeout=60,
        )
        if response.status_code not in ok:
            raise AssertionError(f"{method} {path}: {response.status_code} {response.text[:2000]}")
        return response.json() if response.content else None

    def wait_for_dag(self, dag_id: str, timeout_s: float = 300.0) -> None:
        """Wait until the dag-processor has parsed ``dag_id``; fail with the import errors if any appear."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.api("GET", f"/dags/{dag_id}", ok=(200, 404)).get("dag_id") == dag_id:
                return
            errors = self.api("GET", "/importErrors")["import_errors"]
            if errors:
                raise AssertionError(f"DAG files failed to import: {json.dumps(errors, indent=1)[:4000]}")
            time.sleep(2)
        raise TimeoutError(
            f"{dag_id} not parsed within {timeout_s:.0f} s\n{_tail(self.log_path('dag-processor'), 40)}"
        )

    def unpause(self, dag_id: str) -> None:
        self.api("PATCH", f"/dags/{dag_id}", json_body={"is_paused": False})

    def trigger(
        self, dag_id: str, *, conf: Mapping[str, Any] | None = None, run_id: str | None = None
    ) -> str:
        """Trigger a run now; returns its run id."""
        body: dict[str, Any] = {"logical_date": None, "conf": dict(conf or {})}
        if run_id is not None:
            body["dag_run_id"] = run_id
        return str(self.api("POST", f"/dags/{dag_id}/dagRuns", json_body=body)["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        return str(self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"])

    def task_states(self, dag_id: str, run_id: str) -> list[TaskState]:
        """Every task instance of the run (mapped ones one by one), sorted by task and map index."""
        data = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=1000")
        states = [TaskState.from_api(ti) for ti in data["task_instances"]]
        return sorted(states, key=lambda s: (s.task_id, s.map_index))

    def tries(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> list[dict[str, Any]]:
        """Every try of one task instance (``try_number``, ``state``, ``start_date`` ...), oldest first."""
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/{map_index}/tries"
        tries = self.api("GET", path)["task_instances"]
        return sorted(tries, key=lambda t: int(t["try_number"]))

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str, map_index: int = -1) -> Any:
        """The value a task instance pushed under ``key``, deserialized; None if it pushed none."""
        path = (
            f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
            f"?map_index={map_index}&deserialize=true"
        )
        entry = self.api("GET", path, ok=(200, 404))
        return entry.get("value") if "value" in entry else None

    def task_log(self, dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1) -> str:
        """A try's log as the api-server serves it (from the host the try ran on): one event per line, each
        as JSON with its fields (an exception's message is in ``error_detail``, not in ``event``)."""
        path = (
            f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}"
            f"?map_index={map_index}&full_content=true"
        )
        content = self.api("GET", path)["content"]
        return "\n".join(json.dumps(e) if isinstance(e, dict) else str(e) for e in content)

    def wait_for_run(self, dag_id: str, run_id: str, timeout_s: float, *, expect: str = "success") -> None:
        """Wait for the run to finish in ``expect``; otherwise fail with :meth:`diagnostics`."""
        deadline = time.monotonic() + timeout_s
        state = self.run_state(dag_id, run_id)
        while state not in FINISHED_RUN_STATES and time.monotonic() < deadline:
            time.sleep(2)
            state = self.run_state(dag_id, run_id)
        if state != expect:
            why = "did not finish" if state not in FINISHED_RUN_STATES else f"ended {state}"
            raise RunDidNotSucceed(
                f"{dag_id}/{run_id} {why} (expected {expect}) after {timeout_s:.0f} s\n"
                f"{self.diagnostics(dag_id, run_id)}"
            )

    # -- what went wrong ---------------------------------------------------------------------------------
    def task_log_paths(self, dag_id: str, run_id: str, task: TaskState) -> list[Path]:
        """The log files of a task instance's tries, oldest first, on whichever host each try ran."""
        relative = Path(f"dag_id={dag_id}") / f"run_id={run_id}" / f"task_id={task.task_id}"
        if task.map_index >= 0:
            relative = relative / f"map_index={task.map_index}"
        roots = [self.logs, *(self.host_dir(host) / "logs" for host in self.hosts)]
        found = [path for root in roots for path in (root / relative).glob("attempt=*.log")]
        return sorted(found, key=lambda p: int(p.stem.split("=")[1]))

    def diagnostics(self, dag_id: str, run_id: str, lines: int = 40) -> str:
        """The run's task states, the logs of its task instances that did not succeed, and the tail of every
        component's log."""
        parts = []
        try:
            states = self.task_states(dag_id, run_id)
        except Exception as exc:  # the api-server may be what broke
            states = []
            parts.append(f"task states unavailable: {exc}")
        for task in states:
            parts.append(f"{task.label}: {task.state} (try {task.try_number})")
        for task in states:
            if task.state != "success":
                for path in self.task_log_paths(dag_id, run_id, task)[-2:]:
                    parts.append(f"== {task.label} {path.name}\n{_tail(path, lines)}")
        for name in self.processes:
            parts.append(f"== {name}.log\n{_tail(self.log_path(name), lines)}")
        return "\n".join(parts)


@contextlib.contextmanager
def running_stack(work: Path, database_url: str, options: StackOptions) -> Iterator[AirflowStack]:
    """Start a stack, yield it, and stop every process of it, also when the start fails."""
    stack = AirflowStack(work=work, database_url=database_url, options=options)
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def airflow_stack_options() -> StackOptions:
    """Override in a test module to give the stack environment or fewer components."""
    return StackOptions()


@pytest.fixture(scope="module")
def airflow_stack(
    airflow_stack_options: StackOptions, postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AirflowStack]:
    """A running stack for the module, on a database of its own on the test PostgreSQL server."""
    with (
        scratch_database(postgres_url, "airflow") as database_url,
        running_stack(tmp_path_factory.mktemp("airflow-stack"), database_url, airflow_stack_options) as stack,
    ):
        yield stack
