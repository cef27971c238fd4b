"""Headless Chromium for UI tests, from Debian's ``chromium`` and ``chromium-driver`` packages.

:func:`ensure_chromium` installs them with apt-get when they are missing (as ``scripts/postgres.sh`` installs
PostgreSQL); a machine where that fails fails the test, it never skips it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PACKAGES = ("chromium", "chromium-driver")


def _apt_get(*args: str) -> None:
    apt = shutil.which("apt-get")
    if apt is None:
        raise RuntimeError(
            f"chromium and chromedriver are missing and there is no apt-get to install them: install "
            f"{' '.join(PACKAGES)} (or run scripts/setup.sh on a Debian machine)"
        )
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run([*sudo, apt, *args], env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"apt-get {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-2000:]}")


def ensure_chromium() -> tuple[str, str]:
    """The paths of ``chromium`` and ``chromedriver``, installed with apt-get first if needed (idempotent:
    nothing runs when both are on PATH; ``scripts/setup.sh`` installs them up front)."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser and driver:
        return browser, driver
    _apt_get("update", "-qq")
    _apt_get("install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=600", *PACKAGES)
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver):
        raise RuntimeError(
            f"apt-get installed {' '.join(PACKAGES)} but chromium/chromedriver are not on PATH"
        )
    return browser, driver


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A selenium WebDriver on headless Chromium; quits afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
