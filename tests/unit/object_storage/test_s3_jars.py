from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.spark_jars import delta_jars, jar_setup, s3_jars

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("group", "artifact", "kept"),
    [
        ("org.apache.hadoop", "hadoop-aws", True),
        ("software.amazon.awssdk", "s3", True),
        ("software.amazon.awssdk", "netty-nio-client", True),
        ("io.netty", "netty-codec-http", False),  # Spark ships its own netty
        ("org.slf4j", "slf4j-api", False),
        ("org.apache.hadoop", "hadoop-client-api", False),
    ],
)
def test_only_s3a_and_the_sdk_modules_spark_lacks_are_kept(group: str, artifact: str, kept: bool) -> None:
    assert jar_setup.keep_s3_jar(group, artifact, {"netty-codec-http", "hadoop-client-api"}) is kept


def test_hadoop_aws_follows_pysparks_hadoop(tmp_path: Path) -> None:
    (tmp_path / "hadoop-client-api-3.9.1.jar").write_bytes(b"")
    assert s3_jars.hadoop_version(tmp_path) == "3.9.1"


def test_the_s3_jars_come_after_the_delta_jars_once_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(delta_jars.JAR_CACHE_ENV, str(tmp_path))
    coords = delta_jars.DeltaCoordinates("4.2", "2.13", "4.4.0")
    delta_dir = delta_jars.jar_dir(coords)
    delta_dir.mkdir(parents=True)
    (delta_dir / "delta-spark_4.2_2.13-4.4.0.jar").write_bytes(b"")
    assert [p.name for p in delta_jars.cached_jars(coords)] == ["delta-spark_4.2_2.13-4.4.0.jar"]
    version = s3_jars.hadoop_version()
    s3_dir = s3_jars.s3_jar_dir(version)
    s3_dir.mkdir(parents=True)
    for name in (f"hadoop-aws-{version}.jar", "s3-2.35.4.jar"):
        (s3_dir / name).write_bytes(b"")
    assert [p.name for p in delta_jars.cached_jars(coords)] == [
        "delta-spark_4.2_2.13-4.4.0.jar",
        f"hadoop-aws-{version}.jar",
        "s3-2.35.4.jar",
    ]


def test_the_real_cache_holds_the_s3_jars() -> None:
    jars = s3_jars.cached_s3_jars()
    assert jars and jars[0].name.startswith("hadoop-aws-")
    assert any(p.name.startswith("s3-2.") for p in jars)
    assert not any(p.name.startswith("bundle-") for p in jars)  # the 650 MB SDK bundle is not fetched
