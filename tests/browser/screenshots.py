"""Screenshots of the verification page for the README: a passing and a failing check.

Usage: ``python -m tests.browser.screenshots [--out docs]``. With a version-2 bundle (the
document's commitment aggregated in a batch of five), writes
``verify-page-pass.png`` (a file and its bundle: every step holds) and
``verify-page-fail.png`` (a bundle whose last proof-of-work header was altered: step 9)
and ``verify-page-tsa-untrusted.png`` (a version-3 bundle whose RFC 3161 token, from the
test harness's OpenSSL TSA, is checked against another authority's CA: not trusted).
Needs Chromium (see conftest.py) and openssl.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from ledger.core.proof.bundle import ProofBundle
from ledger.core.timestamps.bundle_part import Rfc3161Token, TimestampsPart
from ledger.core.timestamps.rfc3161 import build_request, token_from_response
from ledger.core.verify_page import render_verify_page
from tests.browser.conftest import CHROMIUM_ARGS, find_chromium
from tests.harness.tsa import issue_tsa, openssl_reply
from tests.ledger.anchor.bundles import DOCUMENT, forge_bundle
from tests.ledger.core.test_proof import flipped, put


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs"))
    out = parser.parse_args().out
    forged = forge_bundle(private="aggregated")
    good = forged.bundle.dumps()
    altered = forged.bundle.to_json()
    altered = put(altered, ("anchor", "headers", 2), flipped(altered["anchor"]["headers"][2], 77))
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        tmp = Path(folder)
        (tmp / "verify.html").write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
        (tmp / "report.txt").write_bytes(DOCUMENT)
        (tmp / "report.txt.proof.json").write_text(good)
        (tmp / "altered").mkdir()
        (tmp / "altered" / "report.txt.proof.json").write_text(json.dumps(altered, indent=2))
        executable = find_chromium()
        assert executable, "Chromium is needed (apt-get install chromium)"
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        for name, bundle in [
            ("pass", tmp / "report.txt.proof.json"),
            ("fail", tmp / "altered" / "report.txt.proof.json"),
        ]:
            page = browser.new_page(viewport={"width": 980, "height": 900})
            page.goto((tmp / "verify.html").as_uri())
            page.set_input_files("#bundle-input", str(bundle))
            page.set_input_files("#document-input", str(tmp / "report.txt"))
            page.wait_for_selector("#result[data-state=done]")
            page.evaluate("() => document.activeElement.blur()")
            path = out / f"verify-page-{name}.png"
            page.screenshot(path=str(path), full_page=True)
            print(f"wrote {path}")
            page.close()
        _untrusted_tsa(browser, tmp, out)
        browser.close()


def _untrusted_tsa(browser: Any, tmp: Path, out: Path) -> None:
    """A version-3 bundle with a token of one test TSA, checked against another's CA."""
    forged = forge_bundle()
    keymr = forged.bundle.receipt.directory_block_keymr
    authority = issue_tsa(tmp / "tsa")
    token = token_from_response(openssl_reply(authority, build_request(keymr, nonce=1)))
    part = TimestampsPart(keymr, (Rfc3161Token.of(token),))
    stamped = ProofBundle.loads(dataclasses.replace(forged.bundle, timestamps=part).dumps())
    folder = tmp / "stamped"
    folder.mkdir()
    (folder / "report.txt").write_bytes(DOCUMENT)
    (folder / "report.txt.proof.json").write_text(stamped.dumps())
    (folder / "verify.html").write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    other = issue_tsa(tmp / "other", name="another TSA")
    (folder / "other-ca.pem").write_bytes(other.ca_file.read_bytes())
    page = browser.new_page(viewport={"width": 980, "height": 900})
    page.goto((folder / "verify.html").as_uri())
    page.set_input_files("#tsa-trust-file", str(folder / "other-ca.pem"))
    page.wait_for_function(
        "() => !/no trust store/.test(document.getElementById('tsa-trust-summary').textContent)"
    )
    page.set_input_files("#bundle-input", str(folder / "report.txt.proof.json"))
    page.set_input_files("#document-input", str(folder / "report.txt"))
    page.wait_for_selector("#result[data-state=done]")
    page.evaluate("() => document.activeElement.blur()")
    path = out / "verify-page-tsa-untrusted.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"wrote {path}")
    page.close()


if __name__ == "__main__":
    main()
