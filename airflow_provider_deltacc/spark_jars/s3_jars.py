"""Locate (and, in the set-up step only, fetch) the jars Spark needs for ``s3a://`` tables.

pip's pyspark ships Hadoop's client but not ``hadoop-aws`` (the S3A filesystem) nor the AWS SDK it calls.
The set-up step fetches ``hadoop-aws`` at the version of pyspark's own Hadoop, and only the AWS SDK v2
modules S3A uses (S3, its transfer manager, STS and the Apache HTTP client: 38 jars, about 14 MB)
instead of the SDK's ``bundle`` that ``hadoop-aws`` names (about 650 MB). They live beside the Delta jars, in
``<jar cache>/hadoop-aws-<version>/``, and every Spark the provider starts gets them with the Delta jars,
so a task writing to S3 names no jar.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError
from airflow_provider_deltacc.spark_jars.delta_jars import (
    cache_root,
    pyspark_home,
    resolve_into,
    shipped_by_spark,
    spark_artifact_ids,
)

#: The AWS SDK v2 modules S3A calls; their own dependencies come with them.
SDK_MODULES = ("s3", "s3-transfer-manager", "sts", "apache-client")
_SDK_GROUP = "software.amazon.awssdk"
_BUNDLE_LINE = re.compile(r"software\.amazon\.awssdk:bundle:jar:([0-9][^:\s]*)")


def hadoop_version(spark_jars: Path | None = None) -> str:
    """The Hadoop version pyspark ships (from its ``hadoop-client-api`` jar)."""
    jars = spark_jars or pyspark_home() / "jars"
    for jar in jars.glob("hadoop-client-api-*.jar"):
        return jar.stem.removeprefix("hadoop-client-api-")
    raise DeltaJarsMissingError(f"pyspark's Hadoop client jar is not in {jars}: is pyspark installed whole?")


def s3_jar_dir(version: str | None = None) -> Path:
    return cache_root() / f"hadoop-aws-{version or hadoop_version()}"


def cached_s3_jars(version: str | None = None) -> list[Path]:
    """The cached S3 jars, ``hadoop-aws`` first; empty when the set-up step has not fetched them."""
    version = version or hadoop_version()
    directory = s3_jar_dir(version)
    main_jar = directory / f"hadoop-aws-{version}.jar"
    if not main_jar.is_file():
        return []
    return [main_jar, *sorted(p for p in directory.glob("*.jar") if p != main_jar)]


def _pom(dependencies: list[tuple[str, str, str]], exclude_bundle: bool) -> str:
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
        (work_dir / "pom.xml").write_text(_pom([("org.apache.hadoop", "hadoop-aws", hadoop)], False))
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
        _pom(dependencies, True),
        lambda group, artifact: keep_s3_jar(group, artifact, spark_artifacts),
        mvn=mvn,
    )
    if not cached_s3_jars(hadoop):
        raise DeltaJarsMissingError(f"hadoop-aws {hadoop} was not fetched into {target}")
    return target
