"""A real headless Chromium for the verification page's tests (Playwright drives it).

Chromium is Debian's ``chromium`` package (``/usr/bin/chromium``; ``NOTARY_CHROMIUM``
names another binary). When it is missing and the tests run as root (CI does), it is
installed with ``apt-get``; when it cannot be had, the tests fail: CI must run them. A
developer without a browser sets ``NOTARY_SKIP_BROWSER_TESTS=1`` to skip them.

Why Playwright: its Python package carries its own driver (no browser download: it is
pointed at Debian's Chromium and never runs ``playwright install``), talks to Chromium
over the DevTools protocol (no chromedriver whose version must match), and hands local
files to ``<input type=file>`` by path, so a 100 MiB file costs no copy.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.debian import apt_install

SKIP_ENV = "NOTARY_SKIP_BROWSER_TESTS"
CHROMIUM_ENV = "NOTARY_CHROMIUM"
#: Headless Chromium as root, with nothing that reaches out (updates, sync, QUIC).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """The Chromium binary to use, or None."""
    for candidate in (os.environ.get(CHROMIUM_ENV), shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="package")
def chromium_executable() -> str:
    """Path of Chromium, installed when missing (see the module docstring)."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: browser tests skipped")
    path = find_chromium()
    problem = ""
    if path is None:
        problem = apt_install("chromium")
        path = find_chromium()
    if path is None:
        pytest.fail(
            "the browser tests need Chromium (Debian package 'chromium'), and it is missing: "
            f"{problem or 'installed, but no binary found'}. Install it "
            f"(apt-get install chromium), point {CHROMIUM_ENV} at a Chromium binary, or set "
            f"{SKIP_ENV}=1 to skip these tests on a developer machine (CI runs them).",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="package")
def browser(chromium_executable: str) -> Iterator[Any]:
    """One headless Chromium for every test of this package (a fresh profile each launch)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.fail(f"playwright is missing ({exc}): pip install -e '.[dev]'", pytrace=False)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_executable, headless=True, args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A new page in its own browser context, its errors collected in ``page.errors``."""
    context = browser.new_context(viewport={"width": 1100, "height": 1000})
    tab = context.new_page()
    tab.errors = []  # type: ignore[attr-defined]
    tab.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    tab.on(
        "console",
        lambda msg: tab.errors.append(msg.text) if msg.type == "error" else None,
    )
    yield tab
    context.close()


def write_page(folder: Path, html: str, name: str = "verify.html") -> str:
    """Write the page to ``folder`` and return its ``file://`` URL."""
    path = folder / name
    path.write_text(html, encoding="utf-8")
    return path.as_uri()
