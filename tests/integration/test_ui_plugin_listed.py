"""``airflow plugins`` lists the provider's UI plugin, from its ``airflow.plugins`` entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]


def test_airflow_plugins_lists_the_delta_conflicts_plugin(airflow_db: Path) -> None:
    airflow = Path(sys.executable).with_name("airflow")
    out = subprocess.run(
        [str(airflow), "plugins", "--output", "json"],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ,
    ).stdout
    plugins = {p["name"]: p for p in json.loads(out[out.index("[{") :])}
    plugin = plugins["deltacc_conflicts"]
    assert "airflow_provider_deltacc.ui.plugin:DeltaConflictsPlugin" in str(plugin["source"])
    assert "'url_prefix': '/deltacc'" in str(plugin["fastapi_apps"])
    views = str(plugin["external_views"])
    assert "/deltacc/conflicts" in views and "'destination': 'task_instance'" in views
