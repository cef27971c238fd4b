from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]


def test_airflow_providers_list_shows_this_provider(airflow_db: Path) -> None:
    airflow = Path(sys.executable).with_name("airflow")
    out = subprocess.run(
        [str(airflow), "providers", "list", "--output", "plain"],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
    ).stdout
    assert "airflow-provider-deltacc" in out


def test_provider_info_names_the_distribution() -> None:
    from importlib import metadata

    from airflow_provider_deltacc.get_provider_info import get_provider_info

    info = get_provider_info()
    assert info["package-name"] == metadata.metadata("airflow-provider-deltacc")["Name"]
    assert info["versions"] == [metadata.version("airflow-provider-deltacc")]
