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


AIRFLOW_SERVICES = ("airflow-init", "api-server", "scheduler", "dag-processor", "triggerer")


def _env_file(name: str) -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in (DOCKER / name).read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )


def _airflow_env() -> dict[str, str]:
    return _env_file("airflow.env")


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
        env_files = service.get("env_file", [])
        for env_file in [env_files] if isinstance(env_files, str) else env_files:
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


def _dockerfile() -> str:
    """The Dockerfile's instructions, without its comments."""
    lines = (DOCKER / "Dockerfile").read_text().splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("#"))


def test_dockerfile_installs_the_connect_extra() -> None:
    """The export carries the [connect] extra's packages; the project is installed without resolving again."""
    assert re.search(r"uv export [^\n]*--extra connect", _dockerfile())


def test_dependencies_are_resolved_once_from_the_lock() -> None:
    """``-e .`` in the export would be resolved against pip's working directory, and a second resolution
    would bring back pyspark-client, which the lock overrides away."""
    text = _dockerfile()
    exports = re.findall(r"uv export ([^\n]*(?:\\\n[^\n]*)*)", text)
    assert exports and all("--no-emit-project" in e and "--frozen" in e for e in exports)
    installs = re.findall(r"pip install ([^\n]*)", text)
    requirement_installs = [line for line in installs if "-r " in line]
    assert len(requirement_installs) == 2  # the jar stage and the image
    assert all("--no-deps" in line for line in requirement_installs)
    assert "-e ." not in text


def test_java_home_does_not_name_an_architecture() -> None:
    text = _dockerfile()
    java_home = re.search(r"JAVA_HOME=(\S+)", text)
    assert java_home is not None
    assert not re.search(r"amd64|arm64|aarch64|x86_64", java_home.group(1))
    assert "ln -sfn" in text and java_home.group(1) in text.split("ln -sfn", 1)[1].split("\n", 1)[0]


def test_no_spark_process_advertises_the_wildcard_address(compose: dict[str, Any]) -> None:
    """With SPARK_LOCAL_IP=0.0.0.0 the driver and the worker advertise 0.0.0.0: executors cannot connect."""
    assert "SPARK_LOCAL_IP" not in _dockerfile()
    assert "SPARK_LOCAL_IP" not in _airflow_env()
    for name, service in compose["services"].items():
        assert service.get("environment", {}).get("SPARK_LOCAL_IP") in (None, "127.0.0.1"), name


def test_spark_master_and_worker_bind_to_their_own_hostnames(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("spark-master", "spark-worker"):
        service = services[name]
        assert service["hostname"] == name
        assert _option(service["command"], "--host") == name
    master_port = _option(services["spark-master"]["command"], "--port")
    assert services["spark-worker"]["command"][-1] == f"spark://spark-master:{master_port}"
    assert _airflow_env()["AIRFLOW_CONN_SPARK_DEFAULT"] == f"spark://spark-master:{master_port}"


def test_every_airflow_component_shares_the_jwt_and_api_secrets(compose: dict[str, Any]) -> None:
    """Tokens minted by one component (the scheduler, for a task) must verify in another (the api-server)."""
    services = compose["services"]
    secrets = {
        name: (
            services[name]["environment"]["AIRFLOW__API_AUTH__JWT_SECRET"],
            services[name]["environment"]["AIRFLOW__API__SECRET_KEY"],
        )
        for name in AIRFLOW_SERVICES
    }
    assert len(set(secrets.values())) == 1
    jwt_secret, api_secret = next(iter(secrets.values()))
    assert jwt_secret.startswith("${AIRFLOW_JWT_SECRET") and api_secret.startswith("${AIRFLOW_API_SECRET_KEY")


def test_example_settings_are_apart_from_the_provider_settings(compose: dict[str, Any]) -> None:
    """``DELTACC_EXECUTION_MODE`` and ``DELTACC_EXAMPLE_ROOT`` are read by dags/, not by the provider."""
    provider_env = _airflow_env()
    examples_env = _env_file("examples.env")
    assert {"DELTACC_EXECUTION_MODE", "DELTACC_EXAMPLE_ROOT"} <= set(examples_env)
    assert not set(examples_env) & set(provider_env)
    for name in AIRFLOW_SERVICES:
        assert compose["services"][name]["env_file"] == ["airflow.env", "examples.env"], name


def test_the_airflow_containers_share_a_postgres_lease_store_by_connection() -> None:
    """Tasks and the gate trigger run in different containers: an embedded SQLite file is not shared."""
    from airflow.models.connection import Connection

    env = _airflow_env()
    conn_id = env["AIRFLOW__DELTACC__LEASE_STORE_CONN_ID"]
    connection = Connection(conn_id=conn_id, uri=env[f"AIRFLOW_CONN_{conn_id.upper()}"])
    assert connection.conn_type == "postgres" and connection.host == "postgres"
    assert "DELTACC_LEASE_STORE_URL" not in env
