"""The anchor stage through the pipeline, proof bundle export, and offline verification."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from connectors.audit import AuditStore
from flows.cli.proof_check import verify_command
from flows.cli.proof_export import export_bundles
from flows.collect_proofs import collect_proofs
from flows.notarize_folder import notarize_folder
from flows.pipeline import open_services
from flows.settings import PipelineSettings
from ledger.core.proof.policy import DEVNET
from ledger.core.proof.steps import ProofError
from ledger.core.proof.verify import verify_bundle
from tests.harness.waiting import WaitTimeout, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


@pytest.mark.parametrize(
    ("mode", "anchors_stored", "version"), [("aggregate", 1, 2), ("entry", 4, 2)]
)
def test_collect_moves_documents_to_anchor_and_bundles_verify_offline(
    tmp_path: Path,
    pipeline_settings: PipelineSettings,
    stack: object,
    mode: str,
    anchors_stored: int,
    version: int,
) -> None:
    """Aggregated: one entry, receipt and anchor for the 4 documents, a v2 bundle each
    (nonce and audit path); one entry each: a v2 bundle each with its nonce."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(4):
        (folder / f"doc-{i}.txt").write_text(f"contract number {i}\n")
    settings = pipeline_settings.model_copy(
        update={"anchor_url": stack.settings.anchor_url, "publish_mode": mode}  # type: ignore[attr-defined]
    )
    collection = f"anchored-{mode}"
    notarize_folder(str(folder), collection, settings, True)

    result: dict = {}

    def anchored() -> bool:
        result.clear()
        result.update(collect_proofs(settings, collection))
        return bool(result["stages"]["anchor"] == 4)

    with contextlib.suppress(WaitTimeout):  # the check below says what was reached
        wait_until(anchored, 90, 1.0)
    assert result["stages"]["anchor"] == 4, result
    assert result["anchor_blocks_rejected"] == 0

    out = tmp_path / "bundles"
    with open_services(settings) as services:
        outcome = export_bundles(services, out, collection=collection, html=True, pages=True)
    assert len(outcome.written) == 4 and not outcome.failed
    assert outcome.page == out / "verify.html" and outcome.page.is_file()
    assert sorted(outcome.sources.values()) == [f"doc-{i}.txt" for i in range(4)]
    assert len(outcome.pages) == 4
    for bundle in outcome.written:  # each page carries exactly its bundle
        page = bundle.with_name(bundle.name.replace(".proof.json", ".verify.html"))
        embedded = page.read_text().split('id="notary-embedded-bundle">', 1)[1]
        assert json.loads(embedded.split("</script>", 1)[0]) == json.loads(bundle.read_text())

    store = AuditStore(settings.audit_url)
    assert len(store.proofs.anchors(collection=collection)) == anchors_stored
    assert store.runs.receipt_count(collection) == 4
    store.close()

    # offline: every bundle checks against its file; a forged document does not
    for i in range(4):
        bundle = next(p for p in outcome.written if p.name.startswith(f"doc-{i}.txt"))
        assert verify_command(folder / f"doc-{i}.txt", bundle, policy=None) == 0
        parsed = json.loads(bundle.read_text())
        assert parsed["version"] == version
        assert (parsed["aggregation"] is not None) == (mode == "aggregate")
        verify_bundle(parsed, document_bytes=f"contract number {i}\n".encode(), policy=DEVNET)
        with pytest.raises(ProofError) as info:
            verify_bundle(json.loads(bundle.read_text()), document_bytes=b"forged", policy=DEVNET)
        assert info.value.step == 1
