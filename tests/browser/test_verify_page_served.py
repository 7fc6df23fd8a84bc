"""The page as the publishing API serves it (``GET /verify``), in the browser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from ledger.api.http.verify_page import VERIFY_PAGE_PATH, router
from tests.harness.servers import AppServer
from tests.ledger.anchor.bundles import DOCUMENT, forge_bundle

pytestmark = pytest.mark.timeout(900)  # the first test may install Chromium


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The page's router alone, on a loopback port (what ``create_app`` includes)."""
    app = FastAPI()
    app.include_router(router)
    with AppServer(app, name="verify-page") as server:
        yield server.url


def test_served_page_verifies_with_nothing_sent_back(
    page: Any, base_url: str, tmp_path: Path
) -> None:
    forged = forge_bundle(headers=2)  # the default policy: 2 confirmations
    document = tmp_path / "report.txt"
    document.write_bytes(DOCUMENT)
    bundle = tmp_path / "report.txt.proof.json"
    bundle.write_text(forged.bundle.dumps())
    requests: list[tuple[str, str]] = []
    page.on("request", lambda r: requests.append((r.method, r.url)))
    response = page.goto(base_url + VERIFY_PAGE_PATH)
    assert response.status == 200
    assert "connect-src 'none'" in response.headers["content-security-policy"]
    page.set_input_files("#bundle-input", str(bundle))
    page.set_input_files("#document-input", str(document))
    page.wait_for_selector("#result[data-state=done]")
    assert page.get_attribute("#verdict", "data-verdict") == "pass"
    assert page.evaluate("() => window.isSecureContext")  # loopback: Web Crypto available
    assert "by Web Crypto" in page.inner_text("#run-note")
    assert requests == [("GET", base_url + VERIFY_PAGE_PATH)]
    assert page.errors == []
