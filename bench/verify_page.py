"""Time the verification page in headless Chromium: a 4 KiB and a 100 MiB file.

Usage: ``python -m bench.verify_page [--mib 100] [--runs 3]``. Writes
``bench/results/verify_page.json``. For each size and each bundle version (1: a
clear-text entry; 2: the document's commitment aggregated in a batch of 1,000), the time
from choosing the file (its bundle already chosen) to the verdict on screen, through the
page's interface, with the file hashed by Web Crypto; and the streamed SHA-256
(``@noble/hashes``, 8 MiB chunks, the path for files over 256 MiB) of the same file.
Baseline: ``hashlib.sha256`` of the same bytes in this process. And, per version, the
steps alone (``NotaryVerify.run`` on a hashed file, 200 times), beside Python's
``verify_bundle`` on the same bundle. Needs Chromium (``apt-get install chromium``) and
Playwright.
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
from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.verify import verify_bundle
from ledger.core.verify_page import render_verify_page
from tests.browser.conftest import CHROMIUM_ARGS, find_chromium
from tests.ledger.anchor.bundles import forge_bundle

STEPS_JS = """([text, digest, policy, n]) => {
  const bytes = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
  const options = {documentSha256: bytes(digest), policy};
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    if (!NotaryVerify.run(text, options).ok) throw new Error("the bundle does not verify");
  }
  return (performance.now() - started) / 1000 / n;
}"""
STEP_RUNS = 200

STREAM_JS = """async () => {
  const file = document.getElementById("document-input").files[0];
  return (await notaryPage.hashFile(file, {mode: "stream"})).seconds;
}"""


def make_file(path: Path, size: int) -> bytes:
    block = hashlib.sha256(path.name.encode()).digest() * (1 << 15)  # 1 MiB
    data = (block * (size // len(block) + 1))[:size]
    path.write_bytes(data)
    return data


#: The bundles timed: version 1, and version 2 with a 10-level audit path.
VERSIONS: dict[str, dict[str, Any]] = {
    "v1": {},
    "v2": {"private": "aggregated", "batch_size": 1000, "leaf_index": 617},
}


def time_page(
    browser: Any, folder: Path, document: Path, data: bytes, version: str
) -> tuple[float, float]:
    forged = forge_bundle(document=data, **VERSIONS[version])
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
    assert page.evaluate("() => notaryPage.last.version") == forged.bundle.version
    assert "by Web Crypto" in page.inner_text("#run-note")
    streamed = float(page.evaluate(STREAM_JS))
    page.close()
    return elapsed, streamed


def time_steps(browser: Any, folder: Path, version: str) -> Figure:
    """Seconds per ``NotaryVerify.run`` in the page; baseline ``verify_bundle`` in Python."""
    document = b"steps only\n"
    forged = forge_bundle(document=document, **VERSIONS[version])
    page_path = folder / f"steps-{version}.html"
    page_path.write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    page = browser.new_page()
    page.goto(page_path.as_uri())
    p = forged.policy
    policy = p.to_json()
    args = [forged.bundle.dumps(), hashlib.sha256(document).hexdigest(), policy, STEP_RUNS]
    in_page = float(page.evaluate(STEPS_JS, args))
    page.close()
    started = time.perf_counter()
    for _ in range(STEP_RUNS):
        verify_bundle(ProofBundle.loads(forged.bundle.dumps()), document_bytes=document, policy=p)
    python = (time.perf_counter() - started) / STEP_RUNS
    return Figure(
        f"page: steps 0-11 of a bundle {version}, per bundle",
        in_page,
        "s",
        python,
        "Python verify_bundle",
        higher_is_better=False,
    )


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
            for version in VERSIONS:
                timings = [time_page(browser, folder, document, data, version) for _ in range(runs)]
                started = time.perf_counter()
                hashlib.sha256(data).digest()
                baseline = time.perf_counter() - started
                figures += _figures(label, version, timings, baseline)
        figures += [time_steps(browser, Path(tmp), version) for version in VERSIONS]
        browser.close()
    return figures


def _figures(
    label: str, version: str, timings: list[tuple[float, float]], baseline: float
) -> list[Figure]:
    names = [
        f"page: {label} file to verdict, bundle {version} (Web Crypto)",
        f"page: {label} streamed SHA-256 (noble), bundle {version} run",
    ]
    return [
        Figure(
            name,
            min(t[i] for t in timings),
            "s",
            baseline,
            "hashlib.sha256",
            higher_is_better=False,
            extra={"runs": [round(t[i], 3) for t in timings]},
        )
        for i, name in enumerate(names)
    ]


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
