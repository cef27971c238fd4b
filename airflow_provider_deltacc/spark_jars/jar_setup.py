"""The set-up step: put the jars every Spark the provider starts needs into the jar cache, once.

``python -m airflow_provider_deltacc.spark_jars.jar_setup --fetch`` (run by ``make setup`` and the Docker
image) resolves with Maven the delta-spark jar of the installed pyspark and the dependencies Spark does not
ship (:mod:`~airflow_provider_deltacc.spark_jars.delta_jars`), ``hadoop-aws`` and the AWS SDK modules it
uses (:mod:`~airflow_provider_deltacc.spark_jars.s3_jars`), and compiles the put-if-absent S3 log store with
``javac`` (:mod:`~airflow_provider_deltacc.spark_jars.put_if_absent`); without ``--fetch`` it lists what is
cached. Every other caller only reads the cache, through those modules; this one runs where the set-up
runs, never in a Spark driver, so it is not in the driver's bundle.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError
from airflow_provider_deltacc.spark_jars import put_if_absent
from airflow_provider_deltacc.spark_jars.delta_jars import (
    FETCH_COMMAND,
    DeltaCoordinates,
    cached_jars,
    installed_coordinates,
    jar_dir,
    pyspark_home,
)
from airflow_provider_deltacc.spark_jars.put_if_absent import JAR_NAME, cached_log_store_jar, java_source
from airflow_provider_deltacc.spark_jars.s3_jars import cached_s3_jars, hadoop_version, s3_jar_dir

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


#: The AWS SDK v2 modules S3A calls; their own dependencies come with them.
SDK_MODULES = ("s3", "s3-transfer-manager", "sts", "apache-client")
_SDK_GROUP = "software.amazon.awssdk"
_BUNDLE_LINE = re.compile(r"software\.amazon\.awssdk:bundle:jar:([0-9][^:\s]*)")


def _delta_pom(coords: DeltaCoordinates) -> str:
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


def fetch_delta_jars(coords: DeltaCoordinates | None = None, *, mvn: str = "mvn") -> Path:
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
        target, _delta_pom(coords), lambda group, artifact: _keep(group, artifact, spark_artifacts), mvn=mvn
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

    coords = installed_coordinates()
    try:
        directory = fetch_delta_jars(coords) if args.fetch else jar_dir(coords)
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
    jar = cached_log_store_jar()
    if jar is None and build:
        try:
            jar = build_log_store_jar()
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


def _s3_pom(dependencies: list[tuple[str, str, str]], exclude_bundle: bool) -> str:
    exclusion = (
        f"<exclusions><exclusion><groupId>{_SDK_GROUP}</groupId><artifactId>bundle</artifactId>"
        "</exclusion></exclusions>"
        if exclude_bundle
        else ""
    )
    body = "".join(
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
        f"<version>{version}</version>{exclusion if artifact == 'hadoop-aws' else ''}</dependency>"
        for group, artifact, version in dependencies
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>airflow-provider-deltacc</groupId><artifactId>s3-jar-resolver</artifactId>"
        f"<version>1</version><dependencies>{body}</dependencies></project>"
    )


def sdk_version(hadoop: str, *, mvn: str = "mvn") -> str:
    """The AWS SDK v2 version ``hadoop-aws`` was built against (the version of the ``bundle`` it names)."""
    with tempfile.TemporaryDirectory(prefix="deltacc-s3-tree-") as work:
        work_dir = Path(work)
        (work_dir / "pom.xml").write_text(_s3_pom([("org.apache.hadoop", "hadoop-aws", hadoop)], False))
        tree = work_dir / "tree.txt"
        subprocess.run([mvn, "-q", "-B", "dependency:tree", f"-DoutputFile={tree}"], cwd=work_dir, check=True)
        found = _BUNDLE_LINE.search(tree.read_text())
    if found is None:
        raise DeltaJarsMissingError(f"hadoop-aws {hadoop} names no AWS SDK bundle; cannot pick SDK modules")
    return found.group(1)


def keep_s3_jar(group: str, artifact: str, spark_artifacts: set[str]) -> bool:
    """Keep ``hadoop-aws`` and what Spark does not ship already (Spark's netty, HTTP client, logging win)."""
    return artifact == "hadoop-aws" or not shipped_by_spark(group, artifact, spark_artifacts)


def fetch_s3_jars(*, mvn: str = "mvn") -> Path:
    """Fetch ``hadoop-aws`` and the SDK modules it needs into the cache (once; a no-op when cached)."""
    hadoop = hadoop_version()
    target = s3_jar_dir(hadoop)
    if cached_s3_jars(hadoop):
        return target
    if shutil.which(mvn) is None:
        raise DeltaJarsMissingError(
            f"Maven (`{mvn}`) is needed once to fetch hadoop-aws {hadoop}; install it."
        )
    sdk = sdk_version(hadoop, mvn=mvn)
    dependencies = [("org.apache.hadoop", "hadoop-aws", hadoop)]
    dependencies += [(_SDK_GROUP, module, sdk) for module in SDK_MODULES]
    spark_artifacts = spark_artifact_ids(pyspark_home() / "jars")
    resolve_into(
        target,
        _s3_pom(dependencies, True),
        lambda group, artifact: keep_s3_jar(group, artifact, spark_artifacts),
        mvn=mvn,
    )
    if not cached_s3_jars(hadoop):
        raise DeltaJarsMissingError(f"hadoop-aws {hadoop} was not fetched into {target}")
    return target


def _compile_classpath() -> list[Path]:
    """The jars the source compiles against: the cached ``delta-storage``, pyspark's Hadoop client and
    SLF4J."""
    spark_jars = pyspark_home() / "jars"
    found = [
        sorted(jar_dir().glob("delta-storage-*.jar")),
        sorted(spark_jars.glob("hadoop-client-api-*.jar")),
        sorted(spark_jars.glob("slf4j-api-*.jar")),
    ]
    if not all(found):
        raise DeltaJarsMissingError(
            f"the put-if-absent log store compiles against delta-storage (in {jar_dir()}) and pyspark's "
            "hadoop-client-api and slf4j-api; fetch the Delta jars first"
        )
    return [jars[-1] for jars in found]


def build_log_store_jar(*, javac: str = "javac") -> Path:
    """Compile the log store into the jar cache (once; a no-op when its jar is there).

    :param javac: the Java compiler.
    :raises DeltaJarsMissingError: no ``javac``, or the jars it compiles against are not cached.
    :raises subprocess.CalledProcessError: the source did not compile.
    """
    cached = cached_log_store_jar()
    if cached is not None:
        return cached
    if shutil.which(javac) is None:
        raise DeltaJarsMissingError(
            f"`{javac}` (a JDK 17) is needed once to build the put-if-absent S3 log store; install one "
            "(e.g. openjdk-17-jdk-headless) and run the set-up step again"
        )
    target = put_if_absent.jar_dir()
    classpath = ":".join(str(p) for p in _compile_classpath())
    with tempfile.TemporaryDirectory(prefix="deltacc-log-store-") as work:
        classes = Path(work) / "classes"
        subprocess.run(
            [javac, "--release", "17", "-nowarn", "-cp", classpath, "-d", str(classes), str(java_source())],
            check=True,
        )
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        with zipfile.ZipFile(staging / JAR_NAME, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr(
                "META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: airflow-provider-deltacc\n"
            )
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        staging.rename(target)
    return target / JAR_NAME


if __name__ == "__main__":
    sys.exit(main())
