"""The verification page in a real headless Chromium (see conftest.py).

The page's verifier is held to the Python one on the tamper suite and more (``cases.py``):
same verdict, same failing step, same reason, same expected / computed values, same step
details. The interface is driven as a person would: file pickers, a drop, the keyboard;
a 100 MiB file is verified both ways the page hashes (Web Crypto, streamed).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ledger.core.proof.policy import SHIPPED
from ledger.core.proof.steps import Step, StepReport
from ledger.core.proof.verify import verify_bundle
from ledger.core.verify_page import content_security_policy, render_verify_page
from tests.browser.cases import (
    Case,
    codec_cases,
    comparable,
    fuzz_cases,
    page_verdict,
    python_verdict,
    reading_cases,
    tamper_cases,
)
from tests.browser.cases_v2 import (
    duplicated_position_cases,
    v2_bundles,
    v2_cases,
    v2_fuzz_cases,
)
from tests.browser.conftest import write_page
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle

pytestmark = pytest.mark.timeout(900)  # the first test may install Chromium

RUN_CASES_JS = """
(cases) => {
  const bytes = (h) => Uint8Array.from(h.match(/../g) || [], (x) => parseInt(x, 16));
  return cases.map((c) => NotaryVerify.run(bytes(c.text), {
    documentSha256: c.document === null ? null : NotaryCodecs.sha256(bytes(c.document)),
    policy: c.policy,
  }));
}
"""

UI_STATE_JS = """
() => ({
  state: document.getElementById("result").dataset.state,
  verdict: document.getElementById("verdict").dataset.verdict,
  failedStep: document.getElementById("verdict").dataset.failedStep ?? null,
  text: document.getElementById("verdict-text").textContent,
  detail: document.getElementById("verdict-detail").textContent,
  expected: document.getElementById("mismatch").hidden ? null
    : document.getElementById("mismatch-expected").textContent,
  computed: document.getElementById("mismatch").hidden ? null
    : document.getElementById("mismatch-computed").textContent,
  steps: [...document.querySelectorAll("#steps li")].map((li) => [
    Number(li.dataset.step), li.dataset.status, li.querySelector(".detail").textContent]),
  note: document.getElementById("run-note").textContent,
})
"""


@pytest.fixture(scope="module")
def forged() -> Forged:
    return forge_bundle()


@pytest.fixture(scope="module")
def v2() -> dict[str, Forged]:
    return v2_bundles()


@pytest.fixture(scope="module")
def files(forged: Forged, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("verify-page")
    paths = {
        "document": folder / "report.txt",
        "other": folder / "report-edited.txt",
        "bundle": folder / "report.txt.proof.json",
        "page": folder / "verify.html",
    }
    paths["document"].write_bytes(DOCUMENT)
    paths["other"].write_bytes(DOCUMENT + b" ")
    paths["bundle"].write_text(forged.bundle.dumps())
    paths["page"].write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    return paths


def open_page(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_function("() => window.notaryPage !== undefined")


def verify_in_ui(page: Any, *, document: Path | None, bundle: Path | None) -> dict[str, Any]:
    """Choose the files with the pickers (the run starts by itself once both are there)."""
    if bundle is not None:
        page.set_input_files("#bundle-input", str(bundle))
    if document is not None:
        page.set_input_files("#document-input", str(document))
    else:
        page.click("#verify-button")
    page.wait_for_selector("#result[data-state=done]")
    return dict(page.evaluate(UI_STATE_JS))


def run_in_page(page: Any, cases: list[Case]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for start in range(0, len(cases), 400):
        batch = [c.to_page() for c in cases[start : start + 400]]
        results += page.evaluate(RUN_CASES_JS, batch)
    return results


# -- the page itself ----------------------------------------------------------------------


def test_page_loads_with_its_csp_and_makes_no_request(page: Any, files: dict[str, Path]) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_page(page, files["page"].as_uri())
    meta = page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content")
    assert meta == content_security_policy()
    assert "connect-src 'none'" in meta and "'unsafe-inline'" not in meta
    assert page.evaluate("() => [...NotaryVerify.VERSIONS.keys()]") == [1, 2, 3]
    verify_in_ui(page, document=files["document"], bundle=files["bundle"])
    assert requests == [files["page"].as_uri()]
    assert page.errors == []


def test_the_csp_stops_the_page_from_sending_anything(page: Any, files: dict[str, Path]) -> None:
    open_page(page, files["page"].as_uri())
    outcome = page.evaluate(
        """async () => {
          const blocked = [];
          document.addEventListener("securitypolicyviolation", (e) => blocked.push(e.effectiveDirective));
          let fetched = "sent";
          try { await fetch("http://127.0.0.1:9/leak"); } catch (exc) { fetched = exc.name; }
          const img = new Image(); img.src = "http://127.0.0.1:9/leak.png";
          const script = document.createElement("script"); script.textContent = "window.ran = 1";
          document.body.append(script);
          await new Promise((r) => setTimeout(r, 200));
          return {fetched, blocked, ran: window.ran === 1};
        }"""
    )
    assert outcome["fetched"] == "TypeError"
    assert not outcome["ran"]
    assert {"connect-src", "img-src", "script-src-elem"} <= set(outcome["blocked"])


def test_the_page_offers_the_shipped_policies_and_trusts_none_by_default() -> None:
    html = render_verify_page()
    config = json.loads(html.split('id="notary-page-config">', 1)[1].split("</script>", 1)[0])
    assert config["policies"] == [p.to_json() for p in SHIPPED.values()]
    assert config["policy"] is None


def test_step_titles_are_the_python_ones(page: Any, files: dict[str, Path]) -> None:
    open_page(page, files["page"].as_uri())
    for version in (1, 2):
        titles = page.evaluate(f"() => NotaryVerify.stepsOf({version})")
        assert [(t["step"], t["title"]) for t in titles] == [(int(s), s.title) for s in Step]


# -- the verifier against the Python one ----------------------------------------------------


def test_every_tamper_case_fails_where_the_python_verifier_fails(
    page: Any, files: dict[str, Path], forged: Forged, v2: dict[str, Forged]
) -> None:
    open_page(page, files["page"].as_uri())
    cases = [
        *tamper_cases(forged),
        *reading_cases(forged),
        *codec_cases(forged),
        *fuzz_cases(forged, 600),
        *v2_cases(v2),
        *duplicated_position_cases(),
        *v2_fuzz_cases(v2, 400),
    ]
    results = run_in_page(page, cases)
    mismatches = []
    by_step: Counter[str] = Counter()
    for case, result in zip(cases, results, strict=True):
        want = comparable(python_verdict(case))
        got = comparable(page_verdict(result))
        failure = want["failure"]
        by_step["pass" if failure is None else f"step {failure['step']}"] += 1
        if got != want:
            mismatches.append((case.name, want, got))
    assert mismatches == [], f"{len(mismatches)} of {len(cases)} differ; first: {mismatches[:3]}"
    # The suite reaches every step, passes included (not a suite that fails everything early).
    assert {f"step {s}" for s in range(12)} <= set(by_step) and by_step["pass"] >= 10, by_step
    assert len(cases) > 6000


def test_valid_bundle_passes_every_step_with_the_python_details(
    page: Any, files: dict[str, Path], forged: Forged
) -> None:
    open_page(page, files["page"].as_uri())
    page.check("#full-values")
    shown = verify_in_ui(page, document=files["document"], bundle=files["bundle"])
    reports: list[StepReport] = []
    verify_bundle(
        forged.bundle, document_bytes=DOCUMENT, policy=forged.policy, on_step=reports.append
    )
    assert shown["verdict"] == "pass"
    assert shown["text"] == (
        "Verified under policy test-chain: every step holds, but this chain is not"
        " independent evidence."
    )
    assert shown["steps"] == [
        [int(r.step), "skipped" if r.skipped else "passed", r.detail] for r in reports
    ]
    assert "its SHA-256 is recorded in directory block 1" in shown["detail"]
    verdict = verify_bundle(forged.bundle, document_bytes=DOCUMENT, policy=forged.policy)
    assert " ".join(verdict.lines()) in shown["detail"]
    assert "by Web Crypto" in shown["note"]
    assert "Policy applied: test-chain, chosen above." in shown["note"]
    assert page.evaluate("() => document.activeElement.id") == "verdict-title"


def test_wrong_file_fails_at_step_one_with_both_hashes(
    page: Any, files: dict[str, Path], forged: Forged
) -> None:
    open_page(page, files["page"].as_uri())
    shown = verify_in_ui(page, document=files["other"], bundle=files["bundle"])
    assert shown["verdict"] == "fail" and shown["failedStep"] == "1"
    assert shown["text"] == "Verification failed at step 1 (file hash)."
    assert shown["expected"] == forged.bundle.document_sha256.hex()
    assert shown["computed"] == hashlib.sha256(DOCUMENT + b" ").hexdigest()
    statuses = [status for _, status, _ in shown["steps"]]
    assert statuses == ["passed", "failed"] + ["unreached"] * 10


def test_bundle_without_a_file_is_only_partly_verified(page: Any, files: dict[str, Path]) -> None:
    open_page(page, files["page"].as_uri())
    shown = verify_in_ui(page, document=None, bundle=files["bundle"])
    assert shown["verdict"] == "partial"
    assert [s[1] for s in shown["steps"]] == ["passed"] + ["skipped"] * 3 + ["passed"] * 8


def one_case_per_step(forged: Forged, v2: dict[str, Forged]) -> list[Case]:
    """The first tamper case failing at each step 0-11, under the forged bundle's policy."""
    chosen: dict[int, Case] = {}
    for case in [*tamper_cases(forged), *v2_cases(v2)]:
        failure = python_verdict(case)["failure"]
        if failure and failure["step"] not in chosen and case.policy == forged.policy:
            chosen[failure["step"]] = case
    assert sorted(chosen) == list(range(12))
    return [chosen[s] for s in range(12)]


def test_tampered_bundles_fail_in_the_interface_at_the_python_step(
    page: Any, files: dict[str, Path], forged: Forged, v2: dict[str, Forged], tmp_path: Path
) -> None:
    for case in one_case_per_step(forged, v2):
        want = python_verdict(case)["failure"]
        bundle = tmp_path / "tampered.proof.json"
        bundle.write_bytes(case.text)
        open_page(page, files["page"].as_uri())
        shown = verify_in_ui(page, document=files["document"], bundle=bundle)
        assert shown["verdict"] == "fail", case.name
        assert shown["failedStep"] == str(want["step"]), (case.name, shown, want)
        assert shown["detail"] == want["reason"], case.name
        assert (shown["expected"] is None) == (
            want["expected"] is None and want["computed"] is None
        )
        if want["expected"] is not None:
            assert shown["expected"] == want["expected"]


def test_policy_chosen_on_the_page_is_applied(page: Any, files: dict[str, Path]) -> None:
    open_page(page, files["page"].as_uri())
    verify_in_ui(page, document=files["document"], bundle=files["bundle"])
    page.select_option("#policy-select", "bitcoin-mainnet")
    page.wait_for_function("() => document.getElementById('verdict').dataset.failedStep === '9'")
    assert "policy bitcoin-mainnet trusts 'bitcoin-mainnet'" in page.inner_text("#verdict-detail")
    assert "Policy applied: bitcoin-mainnet, chosen above." in page.inner_text("#run-note")
    page.select_option("#policy-select", "devnet")
    page.wait_for_function("() => document.getElementById('verdict').dataset.verdict === 'pass'")
    assert "2 confirmations required" not in page.inner_text("#steps")
    assert "(2 required)" in page.inner_text("#steps")


@pytest.mark.parametrize("kind", ["aggregated", "document"])
def test_a_version_2_bundle_passes_with_the_python_details_and_says_how(
    page: Any, files: dict[str, Path], v2: dict[str, Forged], tmp_path: Path, kind: str
) -> None:
    forged = v2[kind]
    bundle = tmp_path / "report.txt.proof.json"
    bundle.write_text(forged.bundle.dumps())
    open_page(page, files["page"].as_uri())
    page.check("#full-values")
    shown = verify_in_ui(page, document=files["document"], bundle=bundle)
    reports: list[StepReport] = []
    verify_bundle(
        forged.bundle, document_bytes=DOCUMENT, policy=forged.policy, on_step=reports.append
    )
    assert shown["verdict"] == "pass", shown
    assert shown["steps"] == [
        [int(r.step), "skipped" if r.skipped else "passed", r.detail] for r in reports
    ]
    how = "as leaf 3 of a batch of 5" if kind == "aggregated" else "in its own entry"
    assert (
        f"its commitment (its SHA-256 sealed with the bundle's nonce) is recorded {how}"
        in (shown["detail"])
    )
    assert page.errors == []


# -- one bundle built into the page ------------------------------------------------------------


def test_embedded_bundle_page_needs_only_the_file(
    page: Any, files: dict[str, Path], forged: Forged, tmp_path: Path
) -> None:
    url = write_page(tmp_path, render_verify_page(forged.bundle, policy=forged.policy))
    open_page(page, url)
    assert not page.is_visible("#bundle-input") and page.is_visible("#embedded")
    assert forged.bundle.document_sha256.hex() in page.inner_text("#embedded-summary")
    page.set_input_files("#document-input", str(files["document"]))
    page.wait_for_selector("#result[data-state=done]")
    assert page.evaluate(UI_STATE_JS)["verdict"] == "pass"
    page.set_input_files("#document-input", str(files["other"]))
    page.wait_for_function("() => document.getElementById('verdict').dataset.failedStep === '1'")


def test_embedded_bundle_cannot_break_out_of_its_script_block(
    page: Any, files: dict[str, Path], forged: Forged, tmp_path: Path
) -> None:
    hostile = forged.bundle.to_json()
    hostile["anchor"]["chain"] = "</script><script>window.owned = 1</script><!--&"
    html = render_verify_page(hostile, policy=forged.policy)
    assert "</script><script>window.owned" not in html
    open_page(page, write_page(tmp_path, html))
    page.set_input_files("#document-input", str(files["document"]))
    page.wait_for_selector("#result[data-state=done]")
    shown = page.evaluate(UI_STATE_JS)
    want = python_verdict(Case("hostile", json.dumps(hostile).encode(), DOCUMENT, forged.policy))
    assert shown["failedStep"] == "9" and shown["detail"] == want["failure"]["reason"]
    assert page.evaluate("() => window.owned === undefined")


# -- drag and drop, keyboard ----------------------------------------------------------------------


def test_dropping_both_files_anywhere_sorts_them_out(
    page: Any, files: dict[str, Path], forged: Forged
) -> None:
    open_page(page, files["page"].as_uri())
    page.evaluate(
        """([bundle, doc]) => {
          const data = new DataTransfer();
          data.items.add(new File([doc], "report.txt"));
          data.items.add(new File([bundle], "report.txt.proof.json"));
          document.querySelector(".lede").dispatchEvent(
            new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
        }""",
        [forged.bundle.dumps(), DOCUMENT.decode()],
    )
    page.wait_for_selector("#result[data-state=done]")
    assert page.evaluate(UI_STATE_JS)["verdict"] == "pass"
    assert "report.txt.proof.json" in page.inner_text("#bundle-chosen")


def test_the_page_works_from_the_keyboard(page: Any, files: dict[str, Path]) -> None:
    open_page(page, files["page"].as_uri())
    page.set_input_files("#bundle-input", str(files["bundle"]))
    order = []
    for _ in range(6):
        page.keyboard.press("Tab")
        order.append(
            page.evaluate("() => document.activeElement.id || document.activeElement.tagName")
        )
    assert order[:3] == ["A", "document-input", "bundle-input"]
    page.focus("#verify-button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#result[data-state=done]")
    assert page.evaluate("() => document.activeElement.id") == "verdict-title"
    for label in ("The document", "Its proof bundle", "Show full values"):
        assert page.get_by_label(label).count() == 1


# -- a large file -----------------------------------------------------------------------------------


def test_a_100_mib_file_verifies_by_web_crypto_and_streamed(
    page: Any, files: dict[str, Path], tmp_path: Path
) -> None:
    big = tmp_path / "big.bin"
    block = hashlib.sha256(b"block").digest() * (1 << 15)  # 1 MiB
    with big.open("wb") as handle:
        for i in range(100):
            handle.write(block[i:] + block[:i])
    document = big.read_bytes()
    forged = forge_bundle(document=document)
    (tmp_path / "big.bin.proof.json").write_text(forged.bundle.dumps())
    open_page(page, write_page(tmp_path, render_verify_page(policy=forged.policy)))
    started = time.perf_counter()
    shown = verify_in_ui(page, document=big, bundle=tmp_path / "big.bin.proof.json")
    elapsed = time.perf_counter() - started
    assert shown["verdict"] == "pass" and "by Web Crypto" in shown["note"], shown["note"]
    streamed = page.evaluate(
        """async () => {
          const file = document.getElementById("document-input").files[0];
          const seen = [];
          const r = await notaryPage.hashFile(file, {mode: "stream", onProgress: (f) => seen.push(f)});
          return {hex: NotaryVerify.detailText([{hex: [...r.digest].map(
            (b) => b.toString(16).padStart(2, "0")).join("")}]), seconds: r.seconds, seen};
        }"""
    )
    assert streamed["hex"] == hashlib.sha256(document).hexdigest()
    seen = streamed["seen"]
    assert seen[0] == 0 and seen[-1] == 1 and seen == sorted(seen) and len(seen) > 10
    print(
        f"\n100 MiB: verified in {elapsed:.2f} s through the interface (Web Crypto);"
        f" streamed SHA-256 {streamed['seconds']:.2f} s"
    )
