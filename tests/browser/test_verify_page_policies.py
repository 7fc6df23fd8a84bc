"""The page's trust policies in Chromium: the panel, the assumed policy, and verdicts that
agree with ``notary verify`` under every shipped policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.core.pow.work import PowFunction, pow_hash
from ledger.core.proof.policy import DEVNET, SHIPPED
from ledger.core.proof.verify import verify_bundle
from ledger.core.verify_page import render_verify_page
from tests.browser.cases import Case, comparable, page_verdict, python_verdict
from tests.browser.conftest import write_page
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle
from tests.ledger.core._vectors import load

pytestmark = pytest.mark.timeout(900)  # the first test may install Chromium


@pytest.fixture(scope="module")
def devnet_bundle() -> Forged:
    """A bundle of the bundled chain, as ``notary demo`` writes them (2 confirmations)."""
    return forge_bundle(chain=DEVNET.chain, headers=DEVNET.confirmations)


def _open(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_function("() => window.notaryPage !== undefined")


def _drop(page: Any, folder: Path, bundle_text: str) -> None:
    (folder / "report.txt").write_bytes(DOCUMENT)
    (folder / "report.txt.proof.json").write_text(bundle_text)
    page.set_input_files("#bundle-input", str(folder / "report.txt.proof.json"))
    page.set_input_files("#document-input", str(folder / "report.txt"))
    page.wait_for_selector("#result[data-state=done]")


def _shown(page: Any) -> dict[str, str]:
    return {
        "verdict": page.get_attribute("#verdict", "data-verdict") or "",
        "failed": page.get_attribute("#verdict", "data-failed-step") or "",
        "text": page.inner_text("#verdict-text"),
        "detail": page.inner_text("#verdict-detail"),
        "note": page.inner_text("#run-note"),
        "summary": page.inner_text("#policy-summary"),
    }


def test_a_devnet_bundle_passes_under_devnet_saying_it_is_not_independent(
    page: Any, tmp_path: Path, devnet_bundle: Forged
) -> None:
    _open(page, write_page(tmp_path, render_verify_page()))
    assert page.input_value("#policy-select") == ""  # nothing chosen: assumed from the bundle
    _drop(page, tmp_path, devnet_bundle.bundle.dumps())
    shown = _shown(page)
    assert shown["verdict"] == "pass"
    assert shown["text"] == (
        "Verified under policy devnet: every step holds, but this chain is not independent"
        " evidence."
    )
    verdict = verify_bundle(devnet_bundle.bundle, document_bytes=DOCUMENT, policy=DEVNET)
    assert " ".join(verdict.lines()) in shown["detail"]
    assert "the operator's own chain: not independent evidence" in shown["detail"]
    assert "the confirmations are the operator's own" in shown["detail"]
    assert "existed no later than" in shown["detail"]
    assert "Policy applied: devnet, assumed from the bundle's chain" in shown["note"]
    assert shown["summary"] == "devnet (assumed from the bundle's chain)"


def test_the_same_bundle_fails_under_bitcoin_mainnet(
    page: Any, tmp_path: Path, devnet_bundle: Forged
) -> None:
    _open(page, write_page(tmp_path, render_verify_page()))
    _drop(page, tmp_path, devnet_bundle.bundle.dumps())
    page.select_option("#policy-select", "bitcoin-mainnet")
    page.wait_for_function("() => document.getElementById('verdict').dataset.verdict === 'fail'")
    shown = _shown(page)
    assert shown["failed"] == "9"
    assert shown["detail"] == (
        "anchored in chain 'notary-devnet-pow'; policy bitcoin-mainnet trusts 'bitcoin-mainnet'"
    )
    relabelled = devnet_bundle.bundle.to_json()
    relabelled["anchor"]["chain"] = "bitcoin-mainnet"
    (tmp_path / "relabelled").mkdir()
    _open(page, write_page(tmp_path, render_verify_page()))
    _drop(page, tmp_path / "relabelled", json.dumps(relabelled, indent=2))
    shown = _shown(page)
    assert shown["failed"] == "9" and shown["summary"].startswith("bitcoin-mainnet (assumed")
    assert shown["detail"].startswith("header 0: work is short")


def test_a_chain_no_policy_names_asks_for_a_choice(
    page: Any, tmp_path: Path, devnet_bundle: Forged
) -> None:
    _open(page, write_page(tmp_path, render_verify_page()))
    unknown = devnet_bundle.bundle.to_json()
    unknown["anchor"]["chain"] = "dogecoin"
    (tmp_path / "report.txt.proof.json").write_text(json.dumps(unknown))
    page.set_input_files("#bundle-input", str(tmp_path / "report.txt.proof.json"))
    page.wait_for_selector("#policy-error:not([hidden])")  # the file is read asynchronously
    assert "No policy here trusts the bundle's chain “dogecoin”" in page.inner_text("#policy-error")


RUN_JS = """
(cases) => {
  const bytes = (h) => Uint8Array.from(h.match(/../g) || [], (x) => parseInt(x, 16));
  return cases.map((c) => NotaryVerify.run(bytes(c.text), {
    documentSha256: NotaryCodecs.sha256(bytes(c.document)), policy: c.policy,
  }));
}
"""


def test_every_shipped_policy_gives_the_clis_verdict(
    page: Any, tmp_path: Path, devnet_bundle: Forged
) -> None:
    cases = []
    text = devnet_bundle.bundle.dumps().encode()
    for name, policy in SHIPPED.items():
        cases.append(Case(f"as is, {name}", text, DOCUMENT, policy))
        relabelled = devnet_bundle.bundle.to_json()
        relabelled["anchor"]["chain"] = policy.chain
        cases.append(Case(f"relabelled, {name}", json.dumps(relabelled).encode(), DOCUMENT, policy))
    _open(page, write_page(tmp_path, render_verify_page()))
    results = page.evaluate(RUN_JS, [c.to_page() for c in cases])
    passed = []
    for case, result in zip(cases, results, strict=True):
        assert comparable(page_verdict(result)) == comparable(python_verdict(case)), case.name
        if result["ok"]:
            passed.append(case.name)
            assert result["facts"]["independent"] is case.policy.independent
    # only the bundled chain's own policy, and regtest (no work at all) once relabelled
    assert passed == ["relabelled, bitcoin-regtest", "as is, devnet", "relabelled, devnet"]


def test_the_policy_panel_screenshot(page: Any, tmp_path: Path, devnet_bundle: Forged) -> None:
    """The panel as a person sees it (written to the test's folder; look at it when the
    panel changes)."""
    page.set_viewport_size({"width": 980, "height": 900})
    _open(page, write_page(tmp_path, render_verify_page()))
    _drop(page, tmp_path, devnet_bundle.bundle.dumps())
    page.select_option("#policy-select", "litecoin-mainnet")
    page.wait_for_function("() => document.getElementById('verdict').dataset.verdict === 'fail'")
    panel = page.locator("#policy")
    path = tmp_path / "policy-panel.png"
    panel.screenshot(path=str(path))
    assert path.stat().st_size > 1000
    facts = page.inner_text("#policy-facts")
    assert "scrypt (N=1024, r=1, p=1)" in facts
    assert "genesis 12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2" in facts


SCRYPT_JS = """
(headers) => headers.map((h) => {
  const raw = Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
  const out = nobleHashes.scrypt(raw, raw, { N: 1024, r: 1, p: 1, dkLen: 32 });
  return Array.from(out, (b) => b.toString(16).padStart(2, "0")).join("");
})
"""


def test_the_inlined_scrypt_is_litecoins_on_real_headers(page: Any, tmp_path: Path) -> None:
    vectors = load("chain_headers.json")
    headers = [vectors["litecoin_mainnet"]["genesis"]["header"]]
    headers += vectors["litecoin_regtest"]["headers"]
    _open(page, write_page(tmp_path, render_verify_page()))
    in_page = page.evaluate(SCRYPT_JS, headers)
    assert in_page == [pow_hash(bytes.fromhex(h), PowFunction.SCRYPT).hex() for h in headers]
    genesis = vectors["litecoin_mainnet"]["genesis"]
    assert bytes.fromhex(in_page[0])[::-1].hex() == genesis["scrypt_hash"]


def test_a_policy_file_chosen_on_the_page_is_applied(
    page: Any, tmp_path: Path, devnet_bundle: Forged
) -> None:
    _open(page, write_page(tmp_path, render_verify_page()))
    _drop(page, tmp_path, devnet_bundle.bundle.dumps())
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps(DEVNET.to_json() | {"name": "my-devnet", "confirmations": 3}))
    page.set_input_files("#policy-file", str(mine))
    page.wait_for_function("() => document.getElementById('verdict').dataset.failedStep === '10'")
    assert page.input_value("#policy-select") == "my-devnet"
    assert "2 confirmations, policy my-devnet needs 3" in page.inner_text("#verdict-detail")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(DEVNET.to_json() | {"trust": "all"}))
    page.set_input_files("#policy-file", str(bad))
    page.wait_for_selector("#policy-error:not([hidden])")
    assert "bad.json is not a policy: unknown policy keys: trust." in page.inner_text(
        "#policy-error"
    )


def test_version_3_canonical_refusals_agree_with_the_cli(page: Any, tmp_path: Path) -> None:
    forged = forge_bundle()
    root = forged.bundle.receipt.directory_block_keymr.hex()
    base = forged.bundle.to_json() | {"version": 3, "commitment": None, "aggregation": None}
    section = {"root": root, "rfc3161": []}
    variants = {
        "valid": base | {"timestamps": section},
        "unknown key": base | {"timestamps": section | {"note": "x"}},
        "upper-case root": base | {"timestamps": {"root": root.upper(), "rfc3161": []}},
        "unknown token key": base
        | {"timestamps": section | {"rfc3161": [{"token": "", "certificates": [], "x": 1}]}},
        "aggregation without commitment": base
        | {"aggregation": {"leaf_index": 0, "tree_size": 1, "audit_path": []}}
        | {"timestamps": section},
        "no timestamps": base,
    }
    cases = [
        Case(name, json.dumps(obj).encode(), DOCUMENT, forged.policy)
        for name, obj in variants.items()
    ]
    _open(page, write_page(tmp_path, render_verify_page()))
    results = page.evaluate(RUN_JS, [c.to_page() for c in cases])
    for case, result in zip(cases, results, strict=True):
        want = python_verdict(case)
        assert comparable(page_verdict(result)) == comparable(want), case.name
        assert want["ok"] is (case.name == "valid"), case.name
