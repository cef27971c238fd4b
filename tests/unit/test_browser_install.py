"""The browser test's Chromium comes from apt-get when it is missing (tests/support/browser.py): installed
once, then found; a machine that cannot install it fails with the reason, it never skips.

apt-get here is a stand-in script on PATH that records its arguments and "installs" two executables; the
real install runs in ``scripts/setup.sh`` and the browser test (tests/integration/airflow_face)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.browser import PACKAGES, ensure_chromium

pytestmark = pytest.mark.unit

APT_GET = """#!/bin/sh
echo "$@" >> {calls}
case "$*" in *fail*) echo "E: Unable to locate package" >&2; exit 100;; esac
case "$1" in install)
  for exe in chromium chromedriver; do echo '#!/bin/sh' > {bin}/$exe; /bin/chmod +x {bin}/$exe; done;;
esac
"""


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH of one directory (no chromium, no apt-get yet); apt-get runs as root."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    return directory


def _apt_get(bin_dir: Path, calls: Path) -> None:
    script = bin_dir / "apt-get"
    script.write_text(APT_GET.format(calls=calls, bin=bin_dir))
    script.chmod(0o755)


def test_missing_chromium_is_installed_with_apt_get_once(bin_dir: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    _apt_get(bin_dir, calls)
    assert ensure_chromium() == (str(bin_dir / "chromium"), str(bin_dir / "chromedriver"))
    assert calls.read_text().splitlines() == [
        "update -qq",
        f"install -y -qq -o DPkg::Lock::Timeout=600 {' '.join(PACKAGES)}",
    ]
    assert PACKAGES == ("chromium", "chromium-driver")
    ensure_chromium()  # already there: apt-get is not run again
    assert len(calls.read_text().splitlines()) == 2


def test_without_apt_get_the_test_fails_naming_the_packages(bin_dir: Path) -> None:
    with pytest.raises(RuntimeError, match="no apt-get to install them: install chromium chromium-driver"):
        ensure_chromium()


def test_a_failing_apt_get_fails_with_its_error(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _apt_get(bin_dir, tmp_path / "calls")
    monkeypatch.setattr("tests.support.browser.PACKAGES", ("fail",))
    with pytest.raises(
        RuntimeError, match=r"apt-get install .* failed \(100\):\nE: Unable to locate package"
    ):
        ensure_chromium()
