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
        "spark-master",
        "spark-worker",
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
    env = dict(
        line.split("=", 1)
        for line in (DOCKER / "airflow.env").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    assert env["AIRFLOW_CONN_SPARK_DEFAULT"].startswith("spark://spark-master:")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
