"""Locate (and, in the set-up step only, fetch) the Delta Lake jars that match the installed pyspark.

The jars live in a cache directory, ``$DELTACC_JAR_CACHE`` or ``~/.cache/airflow-provider-deltacc/jars``,
one sub-directory per Maven coordinate. Only the set-up step (``python -m
airflow_provider_deltacc.spark_jars.delta_jars --fetch``) downloads; every other caller just reads the cache
and fails with a message that names the set-up command.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError

JAR_CACHE_ENV = "DELTACC_JAR_CACHE"
FETCH_COMMAND = "python -m airflow_provider_deltacc.spark_jars.delta_jars --fetch"

# Spark's own classpath wins: Delta's transitive dependencies from these groups are already
# provided by pyspark (usually in a newer version), and a second copy would shadow it.
SPARK_OWNED_GROUPS = (
    "com.fasterxml.jackson",
    "org.roaringbitmap",
    "org.apache.hadoop",
    "org.apache.parquet",
    "org.apache.logging.log4j",
    "org.scala-lang",
    "org.slf4j",
)


@dataclass(frozen=True)
class DeltaCoordinates:
    """The Maven coordinate of the delta-spark jar for one pyspark installation."""

    spark_minor: str
    scala_binary: str
    delta_version: str

    @property
    def artifact_id(self) -> str:
        return f"delta-spark_{self.spark_minor}_{self.scala_binary}"

    @property
    def maven(self) -> str:
        return f"io.delta:{self.artifact_id}:{self.delta_version}"


def pyspark_home() -> Path:
    """The directory of the installed pyspark package (it holds ``jars/`` and ``bin/``)."""
    dist = metadata.distribution("pyspark")
    return Path(str(dist.locate_file("pyspark")))


def _scala_binary_version(spark_jars: Path) -> str:
    for jar in spark_jars.glob("scala-library-*.jar"):
        full = jar.stem.removeprefix("scala-library-")
        return ".".join(full.split(".")[:2])
    return "2.13"


def installed_coordinates() -> DeltaCoordinates:
    """Derive the delta-spark coordinate from the installed ``pyspark`` and ``delta-spark`` packages."""
    spark_version = metadata.version("pyspark")
    delta_version = metadata.version("delta-spark")
    spark_minor = ".".join(spark_version.split(".")[:2])
    return DeltaCoordinates(
        spark_minor=spark_minor,
        scala_binary=_scala_binary_version(pyspark_home() / "jars"),
        delta_version=delta_version,
    )


def cache_root() -> Path:
    configured = os.environ.get(JAR_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "airflow-provider-deltacc" / "jars"


def jar_dir(coords: DeltaCoordinates | None = None) -> Path:
    coords = coords or installed_coordinates()
    return cache_root() / f"{coords.artifact_id}-{coords.delta_version}"


def cached_jars(coords: DeltaCoordinates | None = None) -> list[Path]:
    """The cached jars every Spark the provider starts gets: delta-spark first, its dependencies, then the
    S3 jars when the set-up step fetched them (:mod:`~airflow_provider_deltacc.spark_jars.s3_jars`) and the
    put-if-absent S3 log store when it built it (:mod:`~airflow_provider_deltacc.spark_jars.put_if_absent`);
    raise :class:`DeltaJarsMissingError` when the Delta jars are absent."""
    from airflow_provider_deltacc.spark_jars.put_if_absent import cached_log_store_jar
    from airflow_provider_deltacc.spark_jars.s3_jars import cached_s3_jars

    coords = coords or installed_coordinates()
    directory = jar_dir(coords)
    main_jar = directory / f"{coords.artifact_id}-{coords.delta_version}.jar"
    if not main_jar.is_file():
        raise DeltaJarsMissingError(
            f"Delta jar {coords.maven} is not in the jar cache {directory}. "
            f"Run the set-up step once: `{FETCH_COMMAND}` (or `make setup`); set {JAR_CACHE_ENV} "
            "to use another cache directory."
        )
    others = sorted(p for p in directory.glob("*.jar") if p != main_jar)
    log_store = cached_log_store_jar()
    return [main_jar, *others, *cached_s3_jars(), *([log_store] if log_store else [])]


def _pom(coords: DeltaCoordinates) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>airflow-provider-deltacc</groupId>
  <artifactId>delta-jar-resolver</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.delta</groupId>
      <artifactId>{coords.artifact_id}</artifactId>
      <version>{coords.delta_version}</version>
    </dependency>
  </dependencies>
</project>
"""


def spark_artifact_ids(spark_jars: Path) -> set[str]:
    names = set()
    for jar in spark_jars.glob("*.jar"):
        stem = jar.stem
        parts = stem.split("-")
        while parts and parts[-1][:1].isdigit():
            parts.pop()
        names.add("-".join(parts) if parts else stem)
    return names


def shipped_by_spark(group_id: str, artifact_id: str, spark_artifacts: set[str]) -> bool:
    """Whether Spark's own classpath already has this artifact (or owns its group); Spark's copy wins."""
    return artifact_id in spark_artifacts or any(group_id.startswith(owned) for owned in SPARK_OWNED_GROUPS)


def _keep(group_id: str, artifact_id: str, spark_artifacts: set[str]) -> bool:
    return group_id == "io.delta" or not shipped_by_spark(group_id, artifact_id, spark_artifacts)


def fetch(coords: DeltaCoordinates | None = None, *, mvn: str = "mvn") -> Path:
    """Resolve the delta-spark jar and the dependencies Spark does not ship, with Maven, into the cache."""
    coords = coords or installed_coordinates()
    target = jar_dir(coords)
    try:
        cached_jars(coords)
        return target
    except DeltaJarsMissingError:
        pass
    if shutil.which(mvn) is None:
        raise DeltaJarsMissingError(f"Maven (`{mvn}`) is needed once to fetch {coords.maven}; install it.")
    spark_artifacts = spark_artifact_ids(pyspark_home() / "jars")
    resolve_into(
        target, _pom(coords), lambda group, artifact: _keep(group, artifact, spark_artifacts), mvn=mvn
    )
    cached_jars(coords)
    return target


def resolve_into(target: Path, pom: str, keep: Callable[[str, str], bool], *, mvn: str = "mvn") -> None:
    """Resolve ``pom``'s runtime dependencies with Maven and copy those ``keep(group, artifact)`` accepts
    into ``target``, replacing it whole (a half-copied directory is never left under the final name).

    :param target: the cache directory to fill.
    :param pom: the text of a pom.xml whose dependencies are wanted.
    :param keep: which jars to keep, by Maven group and artifact id.
    :param mvn: the Maven command.
    """
    with tempfile.TemporaryDirectory(prefix="deltacc-jars-") as work:
        work_dir = Path(work)
        (work_dir / "pom.xml").write_text(pom)
        repo_layout = work_dir / "out"
        subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                "-Dmdep.useRepositoryLayout=true",
                f"-DoutputDirectory={repo_layout}",
            ],
            cwd=work_dir,
            check=True,
        )
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for jar in repo_layout.rglob("*.jar"):
            rel = jar.relative_to(repo_layout).parts  # group/parts/.../artifact/version/file.jar
            group_id, artifact_id = ".".join(rel[:-3]), rel[-3]
            if keep(group_id, artifact_id):
                shutil.copy2(jar, staging / jar.name)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fetch", action="store_true", help="download the jars with Maven if missing")
    args = parser.parse_args(argv)
    from airflow_provider_deltacc.spark_jars.put_if_absent import cached_log_store_jar
    from airflow_provider_deltacc.spark_jars.s3_jars import cached_s3_jars, fetch_s3_jars, s3_jar_dir

    coords = installed_coordinates()
    try:
        directory = fetch(coords) if args.fetch else jar_dir(coords)
        s3_directory = fetch_s3_jars() if args.fetch else s3_jar_dir()
        jars = cached_jars(coords)
    except (DeltaJarsMissingError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    s3_jars = cached_s3_jars()
    print(f"{coords.maven}: {len(jars) - len(s3_jars) - bool(cached_log_store_jar())} jars in {directory}")
    if not s3_jars:
        print(f"error: the S3 jars are not in {s3_directory}; run `{FETCH_COMMAND}`", file=sys.stderr)
        return 1
    print(f"hadoop-aws and the AWS SDK modules it uses: {len(s3_jars)} jars in {s3_directory}")
    return _report_log_store(args.fetch)


def _report_log_store(build: bool) -> int:
    """Build (with ``--fetch``) and report the put-if-absent S3 log store. Without a JDK it is only
    reported missing (the writers of S3 tables are then serialized); with one, a missing jar fails the
    listing, so the set-up step runs ``--fetch`` and builds it."""
    from airflow_provider_deltacc.spark_jars import put_if_absent

    jar = put_if_absent.cached_log_store_jar()
    if jar is None and build:
        try:
            jar = put_if_absent.build_log_store_jar()
        except DeltaJarsMissingError as exc:
            print(f"warning: {exc}; writers of one S3 table will be serialized", file=sys.stderr)
            return 0
        except subprocess.CalledProcessError as exc:
            print(f"error: the put-if-absent S3 log store did not compile: {exc}", file=sys.stderr)
            return 1
    if jar is not None:
        print(f"the put-if-absent S3 log store ({put_if_absent.PUT_IF_ABSENT_LOG_STORE}): {jar}")
        return 0
    if shutil.which("javac") is None:
        print("warning: the put-if-absent S3 log store is not built (no javac here)", file=sys.stderr)
        return 0
    print(f"error: the put-if-absent S3 log store is not built; run `{FETCH_COMMAND}`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
