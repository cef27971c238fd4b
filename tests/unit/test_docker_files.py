"""The docker/ files are for users (no Docker engine here), so they are checked statically."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
SPARK_SERVICES = ("spark-master", "spark-worker", "spark-connect")


def _airflow_env() -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in (DOCKER / "airflow.env").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "docker-compose.yml").read_text())


def test_compose_has_the_airflow_components_postgres_and_spark(compose: dict[str, Any]) -> None:
    assert {
        "postgres",
        "api-server",
        "scheduler",
        "dag-processor",
        "triggerer",
        *SPARK_SERVICES,
    } <= set(compose["services"])


def test_compose_references_files_that_exist(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        build = service.get("build")
        if build:
            context = (DOCKER / build["context"]).resolve()
            assert context.is_dir(), name
            assert (context / build["dockerfile"]).is_file(), name
        for env_file in [service["env_file"]] if isinstance(service.get("env_file"), str) else []:
            assert (DOCKER / env_file).is_file(), name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (DOCKER / source).resolve().exists(), f"{name}: {source}"


def test_dockerfile_copies_files_that_exist() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    copies = re.findall(r"^COPY\s+(?!--from)(?:--\S+\s+)*(.+)$", text, flags=re.MULTILINE)
    assert copies
    for line in copies:
        *sources, _target = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source


def test_every_service_image_or_build_is_set_and_env_names_known_settings(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        assert service.get("image") or service.get("build"), name
    env = _airflow_env()
    assert env["AIRFLOW_CONN_SPARK_DEFAULT"].startswith("spark://spark-master:")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_spark_services_bypass_the_airflow_entrypoint(compose: dict[str, Any]) -> None:
    """The image's entrypoint runs any command as ``airflow <command>``: the Spark services set their own."""
    for name in SPARK_SERVICES:
        service = compose["services"][name]
        entrypoint = service.get("entrypoint")
        assert entrypoint and "/entrypoint" not in entrypoint, name
        assert service["command"][0] in ("spark-class", "deltacc-connect-server"), name


def test_spark_connect_service_runs_the_delta_connect_server_for_the_airflow_services(
    compose: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from airflow_provider_deltacc.connect_server import CONNECT_SERVER_CLASS, main

    services = compose["services"]
    server = services["spark-connect"]
    command = server["command"]
    assert command[0] == "deltacc-connect-server"
    assert _option(command, "--host") == "0.0.0.0"  # reachable from the other containers
    port = _option(command, "--port")
    assert _option(command, "--master") in ("local[*]", "spark://spark-master:7077")
    assert server["image"] == services["api-server"]["image"]  # the image with the provider and Delta jars
    assert "delta-data:/data" in server["volumes"] and "delta-data:/data" in services["scheduler"]["volumes"]
    assert _airflow_env()["AIRFLOW_CONN_SPARK_CONNECT_DEFAULT"] == f"spark-connect://spark-connect:{port}"

    # The real CLI accepts the service's arguments and starts the Connect server class with the Delta jars.
    assert main([*command[1:], "--print-command"]) == 0
    line = capsys.readouterr().out
    assert CONNECT_SERVER_CLASS in line and "delta-spark_" in line
    assert "spark.connect.grpc.binding.address=0.0.0.0" in line
    assert f"spark.connect.grpc.binding.port={port}" in line


def test_dockerfile_installs_the_connect_extra() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    assert re.search(r"uv export [^\n]*--extra connect", text)
    assert re.search(r"pip install [^\n]*\[connect\]", text)
