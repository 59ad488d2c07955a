"""Debian's chromium driven by selenium (chromedriver), for tests that need a page's layout."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import need, need_program


@contextmanager
def chromium_driver(width: int, height: int) -> Iterator[Any]:
    """Yield a headless Chromium WebDriver with a window of that size; quit it afterwards."""
    need(Path("/usr/bin/chromium"), "Debian's chromium")
    driver_path = need_program("chromedriver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", f"--window-size={width},{height}",
    ):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
