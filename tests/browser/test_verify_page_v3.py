"""The page with a version-3 bundle: every step as Python runs it, and its RFC 3161 tokens,
with no trust store chosen, shown as present and not checked, never as verified
(test_verify_page_timestamps.py checks them against trust stores), and an OpenTimestamps
stamp over another root shown as invalid (test_verify_page_ots.py has the rest)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ledger.core.proof.bundle import ProofBundle
from ledger.core.proof.steps import StepReport
from ledger.core.proof.verify import verify_bundle
from ledger.core.timestamps.bundle_part import OtsStamp, Rfc3161Token, TimestampsPart
from ledger.core.verify_page import render_verify_page
from tests.browser.cases_v2 import v2_bundles
from tests.browser.test_verify_page import open_page, verify_in_ui
from tests.ledger.anchor.bundles import DOCUMENT, Forged, forge_bundle

TOKEN = (Path(__file__).parents[1] / "vectors" / "rfc3161" / "globalsign-token.p7s").read_bytes()


def _stamped(bundle: ProofBundle) -> ProofBundle:
    part = TimestampsPart(bundle.receipt.directory_block_keymr, (Rfc3161Token.of(TOKEN),))
    return dataclasses.replace(bundle, timestamps=part)


@pytest.mark.parametrize("kind", ["clear", "aggregated"])
def test_version_3_passes_and_says_its_tokens_are_not_checked_without_a_store(
    page: Any, tmp_path: Path, kind: str
) -> None:
    forged: Forged = forge_bundle() if kind == "clear" else v2_bundles()["aggregated"]
    stamped = ProofBundle.loads(_stamped(forged.bundle).dumps())
    assert stamped.version == 3 and stamped.timestamps is not None
    (tmp_path / "report.txt").write_bytes(DOCUMENT)
    bundle = tmp_path / "report.txt.proof.json"
    bundle.write_text(stamped.dumps())
    page_file = tmp_path / "verify.html"
    page_file.write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    open_page(page, page_file.as_uri())
    page.check("#full-values")
    shown = verify_in_ui(page, document=tmp_path / "report.txt", bundle=bundle)
    reports: list[StepReport] = []
    verify_bundle(stamped, document_bytes=DOCUMENT, policy=forged.policy, on_step=reports.append)
    assert shown["verdict"] == "pass", shown
    assert shown["steps"] == [
        [int(r.step), "skipped" if r.skipped else "passed", r.detail] for r in reports
    ]
    assert (
        "1 RFC 3161 timestamp token over the block's KeyMR: present, not checked"
        " (no trust store chosen)" in (shown["detail"])
    )
    assert page.get_attribute("#timestamp-list li", "data-status") == "not-checked"
    assert page.errors == []


def test_an_opentimestamps_stamp_over_another_root_is_invalid(page: Any, tmp_path: Path) -> None:
    forged = forge_bundle()
    hello = Path(__file__).parents[1] / "vectors" / "opentimestamps" / "hello-world.txt.ots"
    part = TimestampsPart(
        forged.bundle.receipt.directory_block_keymr, (), (OtsStamp(hello.read_bytes(), ()),)
    )
    stamped = dataclasses.replace(forged.bundle, timestamps=part)
    (tmp_path / "report.txt").write_bytes(DOCUMENT)
    bundle = tmp_path / "report.txt.proof.json"
    bundle.write_text(stamped.dumps())
    page_file = tmp_path / "verify.html"
    page_file.write_text(render_verify_page(policy=forged.policy), encoding="utf-8")
    open_page(page, page_file.as_uri())
    shown = verify_in_ui(page, document=tmp_path / "report.txt", bundle=bundle)
    # An invalid proof fails the verification, as notary verify exits 1.
    assert shown["verdict"] == "fail", shown
    assert "but 1 independent timestamp failed" in shown["text"], shown
    assert "OpenTimestamps: 1 invalid (see below)." in shown["detail"]
    assert "RFC 3161" not in shown["detail"]
    stamp = page.eval_on_selector(
        "#timestamp-list li", "li => [li.dataset.kind, li.dataset.status, li.textContent]"
    )
    assert stamp[:2] == ["opentimestamps", "invalid"]
    assert f"not the root {forged.bundle.receipt.directory_block_keymr.hex()}" in stamp[2]
    assert page.errors == []
