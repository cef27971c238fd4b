from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_deltacc.contract.exceptions import DeltaJarsMissingError
from airflow_provider_deltacc.spark_jars import delta_jars, jar_setup
from airflow_provider_deltacc.spark_jars.delta_jars import DeltaCoordinates

pytestmark = pytest.mark.unit


def test_coordinates_follow_installed_pyspark_and_delta() -> None:
    from importlib import metadata

    coords = delta_jars.installed_coordinates()
    spark_minor = ".".join(metadata.version("pyspark").split(".")[:2])
    assert coords.artifact_id == f"delta-spark_{spark_minor}_2.13"
    assert coords.maven == f"io.delta:delta-spark_{spark_minor}_2.13:{metadata.version('delta-spark')}"


def test_missing_cache_names_the_setup_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(delta_jars.JAR_CACHE_ENV, str(tmp_path / "empty"))
    with pytest.raises(DeltaJarsMissingError) as err:
        delta_jars.cached_jars(DeltaCoordinates("4.2", "2.13", "4.4.0"))
    assert "io.delta:delta-spark_4.2_2.13:4.4.0" in str(err.value)
    assert delta_jars.FETCH_COMMAND in str(err.value)


def test_cached_jars_lists_delta_spark_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(delta_jars.JAR_CACHE_ENV, str(tmp_path))
    coords = DeltaCoordinates("4.2", "2.13", "4.4.0")
    directory = delta_jars.jar_dir(coords)
    directory.mkdir(parents=True)
    for name in ("a-storage-1.jar", "delta-spark_4.2_2.13-4.4.0.jar", "z-kernel-1.jar"):
        (directory / name).write_bytes(b"")
    assert [p.name for p in delta_jars.cached_jars(coords)] == [
        "delta-spark_4.2_2.13-4.4.0.jar",
        "a-storage-1.jar",
        "z-kernel-1.jar",
    ]


@pytest.mark.parametrize(
    ("group", "artifact", "kept"),
    [
        ("io.delta", "delta-storage", True),
        ("io.delta", "delta-kernel-api", True),
        ("com.fasterxml.jackson.datatype", "jackson-datatype-jdk8", False),
        ("org.apache.hadoop", "hadoop-client-api", False),
        ("org.scala-lang", "scala-library", False),
        ("commons-pool", "commons-pool", False),
        ("io.unitycatalog", "unitycatalog-client", True),
    ],
)
def test_only_jars_spark_does_not_ship_are_kept(group: str, artifact: str, kept: bool) -> None:
    assert jar_setup._keep(group, artifact, {"commons-pool", "antlr4-runtime"}) is kept


def test_the_real_cache_is_populated() -> None:
    jars = delta_jars.cached_jars()
    assert jars[0].name.startswith("delta-spark_")
    assert any(p.name.startswith("delta-storage-") for p in jars)
