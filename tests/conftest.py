"""Test session set-up: jar cache, a throw-away AIRFLOW_HOME, one shared Spark JVM."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.jvm_options import ONE_PARTITION, spark_submit_opts

pytest_plugins = [
    "tests.support.postgres",
    "tests.support.spark_standalone",
    "tests.support.spark_connect",
    "tests.support.airflow_stack",
    "tests.support.s3_server",
]

ROOT = Path(__file__).resolve().parents[1]
# One AIRFLOW_HOME per pytest process, so concurrent runs never delete each other's metadata DB.
AIRFLOW_HOMES = ROOT / ".test-airflow-home"
AIRFLOW_HOME = AIRFLOW_HOMES / f"run-{os.getpid()}"

# Airflow reads these at import time, so they are set before any test module imports it.
os.environ.setdefault("DELTACC_JAR_CACHE", str(ROOT / ".cache" / "jars"))
os.environ["AIRFLOW_HOME"] = str(AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(ROOT / "dags")
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Every JVM spark-submit starts for a test (a local session, a Connect server, a task's driver) reads it.
os.environ.setdefault("SPARK_SUBMIT_OPTS", spark_submit_opts())

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_EXIT_STATUS = pytest.StashKey[int]()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pytest_sessionstart(session: pytest.Session) -> None:
    for stale in AIRFLOW_HOMES.glob("run-*"):
        pid = stale.name.removeprefix("run-")
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    shutil.rmtree(AIRFLOW_HOME, ignore_errors=True)
    AIRFLOW_HOME.mkdir(parents=True)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """An Airflow metadata DB (SQLite) created once per test run with ``airflow db migrate``."""
    marker = AIRFLOW_HOME / ".migrated"
    if not marker.exists():
        airflow = Path(sys.executable).with_name("airflow")
        subprocess.run(
            [str(airflow), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy()
        )
        marker.touch()
    return AIRFLOW_HOME / "airflow.db"


@pytest.fixture(scope="session")
def local_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """One Delta-enabled local Spark session (one JVM) shared by the whole run."""
    from airflow_provider_deltacc.spark_jars.local_session import local_delta_session

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = local_delta_session(
        app_name="deltacc-tests", warehouse_dir=str(warehouse), extra_conf=ONE_PARTITION
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark(local_spark: SparkSession) -> SparkSession:
    """The session tests run on: the shared local one (tests/integration/engine also runs Spark Connect)."""
    return local_spark


@pytest.fixture
def table_path(tmp_path: Path) -> str:
    """A fresh location for a path-based Delta table."""
    return str(tmp_path / "table")


#: Fixtures that start a JVM (a Spark session, a Connect server, a cluster) or an Airflow stack whose tasks
#: write through Spark: a test marked ``jvm_free`` (run in the light lane, beside the JVM lane) uses none.
JVM_FIXTURES = frozenset(
    {
        "local_spark",
        "spark",
        "new_session",
        "spark_connect_server",
        "connect_session",
        "spark_connect_default",
        "spark_standalone",
        "standalone_cluster",
        "airflow_stack",
        "rival",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a ``jvm_free`` test that asks for a JVM; run the ``slow_module`` modules first, longest first,
    so the JVM lane's two workers (``--dist loadfile --no-loadscope-reorder``: a module's tests, and its
    servers, stay on one worker, in this order) take the longest modules before the many short ones and end
    together."""
    for item in items:
        if item.get_closest_marker("jvm_free") is not None:
            jvm = sorted(JVM_FIXTURES.intersection(getattr(item, "fixturenames", ())))
            if jvm:
                raise pytest.UsageError(
                    f"{item.nodeid} is marked jvm_free but uses {', '.join(jvm)}, which start(s) a JVM: "
                    "drop the jvm_free mark (the test then runs in the JVM lane)"
                )
    items.sort(key=lambda item: -module_minutes(item))


def module_minutes(item: pytest.Item) -> float:
    """The minutes a ``slow_module(minutes)`` mark gives the item's module; 0 for the others."""
    mark = item.get_closest_marker("slow_module")
    return float(mark.args[0]) if mark is not None and mark.args else 0.0


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave without interpreter finalization, keeping pytest's exit status.

    With a Spark JVM gateway and pyarrow's C++ thread pool (used by deltalake reads) in one process,
    CPython's finalization now and then forces a pool thread to exit through a noexcept C++ frame, and
    the C++ runtime aborts ("terminate called without an active exception", exit 134) after every test
    has passed and been reported. Every fixture is torn down and every report written by the time this
    hook runs, so skipping finalization loses nothing.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(config.stash.get(_EXIT_STATUS, 0))
