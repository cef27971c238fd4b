"""The docker/ files are for users (no Docker engine here), so they are checked statically."""

from __future__ import annotations

import json
import re
import runpy
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
SPARK_SERVICES = ("spark-master", "spark-worker", "spark-connect")


AIRFLOW_SERVICES = ("airflow-init", "api-server", "scheduler", "dag-processor", "triggerer")
S3_SERVICE = "s3"
S3_INIT_SERVICE = "s3-init"
S3_CONN_ID = "deltacc_s3"
S3_CONN_ENV = f"AIRFLOW_CONN_{S3_CONN_ID.upper()}"


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
    from airflow_provider_deltacc.deployment.connect_server import CONNECT_SERVER_CLASS, main

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


def test_docker_starts_the_connect_server_again_when_it_dies(compose: dict[str, Any]) -> None:
    """The one long-lived process every spark_connect task shares is supervised (docs/deployment.md)."""
    assert compose["services"]["spark-connect"]["restart"] in ("unless-stopped", "always")


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


def _locked_version(package: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == package)


def test_the_s3_service_is_moto_at_a_pinned_version_on_its_own_port(compose: dict[str, Any]) -> None:
    """moto's server, the S3 API the tests run (tests/support/s3_server.py), at a version tag of the locked
    release line: never ``latest``, which would change under a rebuilt stack."""
    service = compose["services"][S3_SERVICE]
    repository, _, tag = service["image"].partition(":")
    assert repository == "motoserver/moto"
    assert re.fullmatch(r"\d+\.\d+\.\d+", tag), service["image"]
    locked = _locked_version("moto")
    assert tag.split(".")[:2] == locked.split(".")[:2], f"the tests run moto {locked}, compose {tag}"
    command = [*service["entrypoint"], *service["command"]]
    assert command[0] == "moto_server"
    assert _option(command, "-H") == "0.0.0.0"  # reachable from the other containers
    port = _option(command, "-p")
    assert [str(p) for p in service["expose"]] == [port]
    assert "ports" not in service  # no authentication: not published to the host
    assert f"//127.0.0.1:{port}/" in " ".join(service["healthcheck"]["test"])


def test_the_airflow_services_get_an_aws_connection_to_the_s3_service(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``aws_conn_id="deltacc_s3"`` reads AIRFLOW_CONN_DELTACC_S3 from airflow.env: the provider turns it
    into S3A settings and delta-rs options that name the S3 service's host and port, path-style, over plain
    HTTP."""
    from airflow_provider_deltacc.object_storage.connections import aws_credentials

    services = compose["services"]
    s3 = services[S3_SERVICE]
    port = _option(s3["command"], "-p")
    value = _airflow_env()[S3_CONN_ENV]
    # compose passes an unquoted env_file value as written, unless it names a variable or has a comment
    assert value[0] not in "'\"" and "$" not in value and " #" not in value
    for name in AIRFLOW_SERVICES:
        assert "airflow.env" in services[name]["env_file"], name
        assert S3_CONN_ENV not in services[name].get("environment", {}), name
    connection = json.loads(value)
    assert connection["conn_type"] == "aws"

    monkeypatch.setenv(S3_CONN_ENV, value)
    credentials = aws_credentials(S3_CONN_ID)
    endpoint = f"http://{S3_SERVICE}:{port}"
    assert credentials.endpoint_url == endpoint and s3.get("hostname", S3_SERVICE) == S3_SERVICE
    assert credentials.hadoop_conf() == {
        "fs.s3a.access.key": connection["login"],
        "fs.s3a.secret.key": connection["password"],
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
    }
    options = credentials.delta_rs_options()
    assert options["AWS_ENDPOINT_URL"] == endpoint and options["AWS_ALLOW_HTTP"] == "true"
    assert options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] == "false"


class _FakeS3:
    """The two calls of boto3's S3 client that docker/s3_init.py makes."""

    def __init__(self) -> None:
        self.buckets: list[str] = []
        self.created: list[dict[str, Any]] = []

    def list_buckets(self) -> dict[str, Any]:
        return {"Buckets": [{"Name": name} for name in self.buckets]}

    def create_bucket(self, **kwargs: Any) -> None:
        self.created.append(kwargs)
        self.buckets.append(kwargs["Bucket"])


def test_the_s3_init_step_creates_the_buckets_where_the_connection_points(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot step in moto's image creates the buckets at the connection's endpoint, with its keys, before
    any Airflow service starts; run again, it leaves them alone."""
    services = compose["services"]
    init = services[S3_INIT_SERVICE]
    assert init["image"] == services[S3_SERVICE]["image"] and init["restart"] == "no"
    assert init["depends_on"] == {S3_SERVICE: {"condition": "service_healthy"}}
    assert services["airflow-init"]["depends_on"][S3_INIT_SERVICE] == {
        "condition": "service_completed_successfully"
    }
    for name in AIRFLOW_SERVICES[1:]:
        assert services[name]["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully"
    assert init["entrypoint"][0] == "python"
    target = init["entrypoint"][-1]
    sources = [v.split(":")[0] for v in init["volumes"] if v.split(":")[1] == target]
    assert len(sources) == 1 and sources[0].startswith("./")
    script = DOCKER / sources[0]

    # The container's environment, as compose sets it.
    for env_file in init["env_file"]:
        for key, value in _env_file(env_file).items():
            monkeypatch.setenv(key, value)
    for key, value in init["environment"].items():
        monkeypatch.setenv(key, str(value))
    s3 = _FakeS3()
    clients: list[tuple[str, dict[str, Any]]] = []

    def client(service: str, **kwargs: Any) -> _FakeS3:
        clients.append((service, kwargs))
        return s3

    monkeypatch.setitem(sys.modules, "boto3", SimpleNamespace(client=client))
    runpy.run_path(str(script), run_name="__main__")
    runpy.run_path(str(script), run_name="__main__")

    connection = json.loads(_airflow_env()[S3_CONN_ENV])
    port = _option(services[S3_SERVICE]["command"], "-p")
    expected = {
        "endpoint_url": f"http://{S3_SERVICE}:{port}",
        "region_name": connection["extra"]["region_name"],
        "aws_access_key_id": connection["login"],
        "aws_secret_access_key": connection["password"],
    }
    assert clients == [("s3", expected), ("s3", expected)]
    assert s3.created == [{"Bucket": name} for name in init["environment"]["S3_BUCKETS"].split()]
    assert s3.created  # at least one bucket, created once


def _final_stage() -> list[tuple[str, str]]:
    """The last stage's instructions, as (INSTRUCTION, arguments), continuation lines joined."""
    text = _dockerfile().replace("\\\n", " ")
    steps = [(*line.split(None, 1), "")[:2] for line in text.splitlines() if line.strip()]
    start = max(i for i, (instruction, _) in enumerate(steps) if instruction.upper() == "FROM")
    return [(instruction.upper(), args.strip()) for instruction, args in steps[start:]]


_DATA = r"/data/?(?=[\s;&|]|$)"


def test_the_image_gives_data_to_the_airflow_user_before_switching_to_it() -> None:
    """Docker fills an empty named volume from the image's directory at the mount point, owner included: a
    /data the image lacks (or root's) becomes a root-owned volume the airflow user cannot write."""
    steps = _final_stage()
    user: str | None = None
    made_at: int | None = None
    for index, (instruction, args) in enumerate(steps):
        if instruction == "USER":
            user = args.split(":")[0]
        elif instruction == "VOLUME":
            # after a VOLUME line, build steps no longer change that directory
            assert made_at is not None or not re.search(_DATA, args), args
        elif instruction == "RUN" and re.search(rf"\bmkdir\s+(?:-\S+\s+)*{_DATA}", args):
            assert re.search(rf"\bchown\s+(?:-\S+\s+)*airflow(?::\S+)?\s+{_DATA}", args), args
            assert user == "root", f"/data is made as {user}"
            made_at = index
    assert made_at is not None, "the image does not make /data"
    later = steps[made_at + 1 :]
    assert [args for instruction, args in later if instruction == "USER"][-1] == "airflow"
    for instruction, args in later:
        if instruction == "RUN":
            assert not re.search(rf"\b(?:chown|rm)\b.*\s{_DATA}", args), args


def _mounts(service: dict[str, Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """The service's volumes as (source, target, long-syntax options); source is None for an anonymous one."""
    mounts: list[tuple[str | None, str, dict[str, Any]]] = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            mounts.append((volume.get("source"), volume["target"], volume))
        else:
            parts = volume.split(":")
            mounts.append((None, parts[0], {}) if len(parts) == 1 else (parts[0], parts[1], {}))
    return mounts


def test_every_service_mounting_the_data_volume_runs_the_image_as_airflow(compose: dict[str, Any]) -> None:
    """The volume at /data takes its owner from the image built by docker/Dockerfile, so every service that
    mounts it runs that image as airflow; only a one-shot step that chowns it could run as root."""
    services = compose["services"]
    dockerfile = (DOCKER / "Dockerfile").resolve()
    built = {
        service["image"]
        for service in services.values()
        if service.get("build")
        and (DOCKER / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == dockerfile
    }
    assert built
    named = set(compose.get("volumes") or {})
    mounting = []
    for name, service in services.items():
        for source, target, options in _mounts(service):
            if target.rstrip("/") != "/data":
                continue
            mounting.append(name)
            assert source in named, f"{name}: {source} (a bind mount keeps the host's owner)"
            # nocopy: Docker would copy nothing from the image into a new volume
            assert not (options.get("volume") or {}).get("nocopy"), name
            assert service.get("image") in built, name
            user = str(service.get("user", "airflow")).split(":")[0]
            if user in ("root", "0"):
                step = f"{service.get('entrypoint', '')} {service.get('command', '')}"
                assert service.get("restart") == "no" and "chown" in step, name
            else:
                assert user in ("airflow", "50000"), name
    assert {*AIRFLOW_SERVICES, "spark-worker", "spark-connect"} <= set(mounting)
