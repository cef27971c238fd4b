"""A real YARN cluster on 127.0.0.1 for ``deploy_mode=cluster`` tests: Hadoop's MiniYARNCluster (one
ResourceManager, one NodeManager, the local file system), as Spark's own YARN suite runs it.

The Hadoop jars are those of the Hadoop version pip's pyspark bundles (``hadoop-client-api-<v>.jar``), fetched
once from Maven Central with Maven into ``.cache/mini-yarn-<v>`` (``hadoop-minicluster`` and the JUnit and
Mockito jars its test classes load); the launcher ``mini_yarn/MiniYarn.java`` is compiled next to them.

Spark on YARN wants ``$SPARK_HOME/python/lib/pyspark.zip``, which pip's pyspark does not ship: the containers'
Python (this venv's) has pyspark installed, so ``PYSPARK_ARCHIVES_PATH`` names an empty zip instead; and
``spark.yarn.jars`` points at pip's pyspark jars on this machine, so nothing is uploaded.
"""

from __future__ import annotations

import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.jvm_options import JVM
from tests.support.processes import stop_processes

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = Path(__file__).with_name("mini_yarn") / "MiniYarn.java"
_EXTRA_TEST_JARS = (
    ("org.junit.jupiter", "junit-jupiter-api", "5.10.2"),
    ("junit", "junit", "4.13.2"),
    ("org.mockito", "mockito-core", "4.11.0"),
)


def pyspark_home() -> Path:
    from airflow_provider_deltacc.hooks.submit import pip_spark_home

    home = pip_spark_home()
    assert home is not None, "pip's pyspark (with bin/spark-submit) is needed"
    return Path(home)


def hadoop_version() -> str:
    """The Hadoop version pip's pyspark bundles."""
    [jar] = (pyspark_home() / "jars").glob("hadoop-client-api-*.jar")
    return jar.stem.removeprefix("hadoop-client-api-")


def _pom(version: str) -> str:
    deps = [("org.apache.hadoop", "hadoop-minicluster", version), *_EXTRA_TEST_JARS]
    xml = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>deltacc.tests</groupId><artifactId>mini-yarn</artifactId><version>1</version>"
        f"<dependencies>{xml}</dependencies></project>"
    )


def mini_yarn_classpath() -> str:
    """Fetch (once) and compile what the cluster needs; return its Java class path."""
    version = hadoop_version()
    home = ROOT / ".cache" / f"mini-yarn-{version}"
    lib = home / "lib"
    if not (home / "fetched").exists():
        home.mkdir(parents=True, exist_ok=True)
        (home / "pom.xml").write_text(_pom(version))
        subprocess.run(
            ["mvn", "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
            cwd=home,
            check=True,
            timeout=1800,
        )
        (home / "fetched").touch()
    classes = home / "classes"
    if not (classes / "MiniYarn.class").exists() or (classes / "MiniYarn.class").stat().st_mtime < (
        LAUNCHER.stat().st_mtime
    ):
        classes.mkdir(exist_ok=True)
        subprocess.run(
            ["javac", "-cp", f"{lib}/*", "-d", str(classes), str(LAUNCHER)], check=True, timeout=300
        )
    return f"{lib}/*:{classes}"


@contextmanager
def mini_yarn_cluster(work: Path, timeout_s: float = 120) -> Iterator[Path]:
    """Run a MiniYARNCluster for the block; yield its configuration directory (``HADOOP_CONF_DIR``).

    :param work: a directory for its configuration and logs.
    :param timeout_s: how long it may take to start.
    """
    classpath = mini_yarn_classpath()
    conf_dir = work / "yarn-conf"
    log = (work / "mini-yarn.log").open("w")
    process = subprocess.Popen(
        ["java", "-Xmx768m", *JVM, "-cp", classpath, "MiniYarn", str(conf_dir)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=work,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not (conf_dir / "ready").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MiniYARNCluster did not start; see {work / 'mini-yarn.log'}")
            time.sleep(0.5)
        yield conf_dir
    finally:
        stop_processes(process)
        log.close()


def yarn_client_env(work: Path) -> dict[str, str]:
    """The environment spark-submit needs to submit a Python job to the cluster from this machine."""
    archive = work / "empty-pyspark-archive.zip"
    zipfile.ZipFile(archive, "w").close()
    return {"PYSPARK_ARCHIVES_PATH": str(archive), "SPARK_HOME": str(pyspark_home())}


def yarn_spark_conf() -> dict[str, str]:
    """Settings for a small job on the one-node cluster, with this venv's Python in every container."""
    return {
        "spark.yarn.jars": f"local:{pyspark_home() / 'jars'}/*",
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": sys.executable,
        "spark.driver.memory": "512m",
        # A cluster-mode driver's JVM (its container's); the executors' come with SPARK_SUBMIT_OPTS.
        "spark.driver.defaultJavaOptions": " ".join(JVM),
        "spark.executor.memory": "512m",
        "spark.executor.instances": "1",
        "spark.ui.enabled": "false",
    }


if __name__ == "__main__":
    # The set-up step (scripts/setup.sh) fetches and compiles once, so no test pays for Maven.
    print(f"mini-yarn: Hadoop {hadoop_version()}: {mini_yarn_classpath()}")
    sys.exit(0)
