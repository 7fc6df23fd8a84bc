"""Time the verification page in headless Chromium: a 4 KiB and a 100 MiB file.

Usage: ``python -m bench.verify_page [--mib 100] [--runs 3]``. Writes
``bench/results/verify_page.json``. For each size, the time from choosing the file (its
bundle already chosen) to the verdict on screen, through the page's interface, with the
file hashed by Web Crypto; and the streamed SHA-256 (``@noble/hashes``, 8 MiB chunks, the
path for files over 256 MiB) of the same file. Baseline: ``hashlib.sha256`` of the same
bytes in this process. Needs Chromium (``apt-get install chromium``) and Playwright.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from bench.common import Figure, print_table, write_results
from ledger.core.verify_page import render_verify_page
from tests.browser.conftest import CHROMIUM_ARGS, find_chromium
from tests.ledger.anchor.bundles import forge_bundle

STREAM_JS = """async () => {
  const file = document.getElementById("document-input").files[0];
  return (await notaryPage.hashFile(file, {mode: "stream"})).seconds;
}"""


def make_file(path: Path, size: int) -> bytes:
    block = hashlib.sha256(path.name.encode()).digest() * (1 << 15)  # 1 MiB
    data = (block * (size // len(block) + 1))[:size]
    path.write_bytes(data)
    return data


def time_page(browser: Any, folder: Path, document: Path, data: bytes) -> tuple[float, float]:
    forged = forge_bundle(document=data)
    bundle = folder / (document.name + ".proof.json")
    bundle.write_text(forged.bundle.dumps())
    page_path = folder / "verify.html"
    page_path.write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    page = browser.new_page()
    page.goto(page_path.as_uri())
    page.set_input_files("#bundle-input", str(bundle))
    started = time.perf_counter()
    page.set_input_files("#document-input", str(document))
    page.wait_for_selector("#result[data-state=done]")
    elapsed = time.perf_counter() - started
    assert page.get_attribute("#verdict", "data-verdict") == "pass"
    assert "by Web Crypto" in page.inner_text("#run-note")
    streamed = float(page.evaluate(STREAM_JS))
    page.close()
    return elapsed, streamed


def run(sizes: list[tuple[str, int]], runs: int) -> list[Figure]:
    executable = find_chromium()
    if executable is None:
        raise SystemExit("Chromium is needed: apt-get install chromium")
    figures = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        for label, size in sizes:
            folder = Path(tmp) / label.replace(" ", "")
            folder.mkdir()
            document = folder / f"document-{label.replace(' ', '')}.bin"
            data = make_file(document, size)
            timings = [time_page(browser, folder, document, data) for _ in range(runs)]
            started = time.perf_counter()
            hashlib.sha256(data).digest()
            baseline = time.perf_counter() - started
            figures.append(
                Figure(
                    f"page: {label} file to verdict (Web Crypto)",
                    min(t[0] for t in timings),
                    "s",
                    baseline,
                    "hashlib.sha256",
                    higher_is_better=False,
                    extra={"runs": [round(t[0], 3) for t in timings]},
                )
            )
            figures.append(
                Figure(
                    f"page: {label} streamed SHA-256 (noble)",
                    min(t[1] for t in timings),
                    "s",
                    baseline,
                    "hashlib.sha256",
                    higher_is_better=False,
                    extra={"runs": [round(t[1], 3) for t in timings]},
                )
            )
        browser.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sizes = [("4 KiB", 4 << 10), (f"{args.mib} MiB", args.mib << 20)]
    figures = run(sizes, args.runs)
    print_table("verification page (headless Chromium)", figures)
    print(f"results: {write_results('verify_page', figures)}")


if __name__ == "__main__":
    main()
