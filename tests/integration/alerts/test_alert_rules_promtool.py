"""The example alert rules (docs/alerts/prometheus_rules.yml) checked by Prometheus's own tool: ``promtool
check rules`` parses them, and ``promtool test rules`` (prometheus_rules_test.yml) makes each rule fire on
series over its threshold, with its labels and rendered annotations, and stay quiet on series under it.
``promtool`` comes with Debian's ``prometheus`` package, which the set-up installs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.jvm_free]

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "docs" / "alerts" / "prometheus_rules.yml"
RULE_TESTS = Path(__file__).with_name("prometheus_rules_test.yml")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: scripts/setup.sh installs Debian's prometheus package"
    return subprocess.run([promtool, *args], capture_output=True, text=True, timeout=120)


def test_promtool_parses_the_rules_and_each_fires_over_its_threshold_only() -> None:
    checked = _promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 6 rules found" in checked.stdout, checked.stdout

    tested = _promtool("test", "rules", str(RULE_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout, tested.stdout
