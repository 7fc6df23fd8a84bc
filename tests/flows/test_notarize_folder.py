"""End to end: a folder notarized through the real node, wallet and publishing API."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from connectors.audit import (
    AuditStore,
    CollectionModeError,
    DocumentIn,
    NewNotarization,
    Stage,
)
from connectors.audit.batches import Batches
from connectors.audit.notarizations import Notarizations
from connectors.node import NodeClient
from flows.cli.commands.notarize import _print_summary
from flows.notarize_folder import notarize_folder
from flows.settings import PipelineSettings
from ledger.core.receipt import Receipt, verify_receipt
from tasks.documents import collection_chain_id, document_entry

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def make_files(root: Path, count: int) -> dict[str, bytes]:
    files = {}
    for i in range(count):
        rel = f"sub{i % 3}/file-{i}.txt"
        data = f"document {i}\n".encode() * (i + 1)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        files[rel] = data
    (root / ".hidden").write_text("ignored")
    (root / "partial.part").write_text("ignored")
    return files


def test_folder_is_notarized_with_verified_receipts_and_rerun_publishes_nothing(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    """Clear mode: one version-1 entry per document, its path, size and hash in clear."""
    pipeline_settings = pipeline_settings.model_copy(update={"publish_mode": "clear"})
    folder = tmp_path / "docs"
    files = make_files(folder, 20)
    summary = notarize_folder(str(folder), "e2e", pipeline_settings, True)

    assert summary["documents_seen"] == 20
    assert summary["published"] == 20
    assert summary["documents_with_receipt"] == 20
    assert summary["documents_in_ledger"] == 20
    assert summary["documents_waiting"] == 0 and summary["documents_failed"] == 0
    chain_id = collection_chain_id("e2e")
    store = AuditStore(pipeline_settings.audit_url)
    proofs = store.proofs.records(collection="e2e")
    assert len(proofs) == 20
    node = NodeClient(pipeline_settings.node_url)
    for proof in proofs:
        row = proof.notarization
        assert row.sha256 == hashlib.sha256(files[row.path]).hexdigest()
        assert row.chain_id == chain_id and row.stage == "ledger"
        expected = document_entry(
            chain_id, sha256=row.sha256, size_bytes=row.size_bytes, path=row.path
        )
        assert row.entry_hash == expected.entry_hash
        assert (
            proof.receipt is not None and row.dblock_height == proof.receipt.directory_block_height
        )
        receipt = Receipt.from_json(proof.receipt.raw)
        dblock = node.dblock_by_height(row.dblock_height)
        verify_receipt(
            receipt, trusted_directory_block_keymr=bytes.fromhex(dblock["dblock"]["keymr"])
        )

    again = notarize_folder(str(folder), "e2e", pipeline_settings, True)
    assert again["published"] == 0 and again["queued"] == 0
    assert again["skipped_known"] == 20 and again["documents_with_receipt"] == 20
    assert len(store.proofs.records(collection="e2e")) == 20


def test_changed_file_is_notarized_again(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    folder = tmp_path / "docs"
    make_files(folder, 3)
    notarize_folder(str(folder), "changes", pipeline_settings, True)
    (folder / "sub0" / "file-0.txt").write_bytes(b"changed contents")
    summary = notarize_folder(str(folder), "changes", pipeline_settings, True)
    assert summary["published"] == 1
    assert summary["skipped_known"] == 2
    # Every line counts this run's 3 files; the collection's 4 are a labelled total.
    assert summary["documents_with_receipt"] == 3 and summary["documents_in_ledger"] == 3
    assert summary["collection_totals"]["with_receipt"] == 4


def test_run_killed_after_posting_is_finished_by_rerun_without_duplicates(
    tmp_path: Path,
    pipeline_settings: PipelineSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two batch entries of 6; the run dies after the API accepted the second."""
    settings = pipeline_settings.model_copy(update={"aggregate_batch_size": 6})
    folder = tmp_path / "docs"
    make_files(folder, 12)
    calls = {"n": 0}
    original = Notarizations.mark_published

    def crash_on_second_batch(
        self: Notarizations, entry_hashes: dict[int, str], **then: Stage | None
    ) -> int:
        calls["n"] += 1
        if calls["n"] >= 2:
            raise RuntimeError("killed after the API accepted the batch")
        return original(self, entry_hashes, **then)

    monkeypatch.setattr(Notarizations, "mark_published", crash_on_second_batch)
    with pytest.raises(Exception, match="killed"):
        notarize_folder(str(folder), "crash", settings, True)
    monkeypatch.setattr(Notarizations, "mark_published", original)

    summary = notarize_folder(str(folder), "crash", settings, True)
    assert summary["documents_with_receipt"] == 12
    assert summary["documents_waiting"] == 0
    assert summary["skipped_known"] == 12  # queued by the killed run
    assert summary["queued"] == 0 and summary["published"] == 0
    assert summary["published_for_other_runs"] > 0
    _print_summary(summary | {"wall_seconds": 1.0})
    shown = " ".join(capsys.readouterr().out.split())
    assert "Nothing new to publish" not in shown
    assert f"finished publishing {summary['published_for_other_runs']} that an earlier" in shown
    assert chain_entry_hashes(settings, "crash") == 3  # the chain's first entry + 2 batches


def test_run_killed_between_batch_and_publish_is_finished_once(
    tmp_path: Path, pipeline_settings: PipelineSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch and its members are recorded, the run dies before posting its entry: the
    next run posts it once, and aggregates the documents it had not batched."""
    settings = pipeline_settings.model_copy(update={"aggregate_batch_size": 5})
    folder = tmp_path / "docs"
    make_files(folder, 8)
    original = Batches.record

    def crash_after_first_batch(self: Batches, **kwargs: object) -> object:
        original(self, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt("killed after the batch was recorded")

    monkeypatch.setattr(Batches, "record", crash_after_first_batch)
    with pytest.raises(KeyboardInterrupt):
        notarize_folder(str(folder), "crash-batch", settings, True)
    monkeypatch.setattr(Batches, "record", original)
    store = AuditStore(settings.audit_url)
    (batch,) = store.batches.read(collection="crash-batch")
    assert (batch.stage, batch.size, batch.members) == ("pending", 5, 5)

    summary = notarize_folder(str(folder), "crash-batch", settings, True)
    assert summary["queued"] == 3 and summary["published"] == 3
    assert summary["skipped_known"] == 5 and summary["published_for_other_runs"] == 5
    assert summary["documents_with_receipt"] == 8 and summary["documents_waiting"] == 0
    assert [(b.size, b.stage) for b in store.batches.read(collection="crash-batch")] == [
        (5, "ledger"),
        (3, "ledger"),
    ]
    assert chain_entry_hashes(settings, "crash-batch") == 3
    again = notarize_folder(str(folder), "crash-batch", settings, True)
    assert again["published"] == 0 and again["skipped_known"] == 8
    store.close()


def chain_entry_hashes(settings: PipelineSettings, collection: str) -> int:
    """How many entries the collection's chain holds; fails when one is there twice."""
    from connectors.publishing import PublishingClient

    store = AuditStore(settings.audit_url)
    record = store.collections.find(collection)
    store.close()
    assert record is not None
    with PublishingClient(settings.api_url, settings.resolve_api_key()) as api:
        response = api._request("GET", f"/chains/{record.chain_id}/entries?limit=1000")
    hashes = [item["entry_hash"] for item in response["items"]]
    assert len(hashes) == len(set(hashes))
    return len(hashes)


def test_links_and_special_files_are_refused_and_counted(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    folder = tmp_path / "docs"
    make_files(folder, 2)
    outside = tmp_path / "secret.txt"
    outside.write_text("outside the folder")
    (folder / "link.txt").symlink_to(outside)
    os.mkfifo(folder / "pipe")
    summary = notarize_folder(str(folder), "refusals", pipeline_settings, True)
    assert summary["documents_seen"] == 2 and summary["documents_with_receipt"] == 2
    assert summary["refused"] == 2
    listed = Path(summary["refused_list"]).read_text(encoding="utf-8").splitlines()
    assert sorted(line.split("\t")[0] for line in listed) == ["link.txt", "pipe"]
    assert not any(m.startswith(("link.txt: ", "pipe: ")) for m in summary["errors"])


def test_a_collection_of_an_older_store_goes_on_in_clear_without_a_mode(
    tmp_path: Path, pipeline_settings: PipelineSettings
) -> None:
    """An audit store from before publish modes: a version-1 row left pending. With no mode
    chosen the run keeps the version-1 chain (publishing that row and the new files);
    asking for a private mode is refused."""
    folder = tmp_path / "docs"
    files = make_files(folder, 3)
    old_path = "sub0/file-0.txt"
    store = AuditStore(pipeline_settings.audit_url)
    (doc_id,) = store.notarizations.upsert_documents(
        f"folder:{folder}",
        [DocumentIn(old_path, hashlib.sha256(files[old_path]).hexdigest(), len(files[old_path]))],
    )
    chain_id = collection_chain_id("legacy")
    store.notarizations.add(
        [NewNotarization(doc_id, "legacy", chain_id, hashlib.sha256(files[old_path]).hexdigest())]
    )
    assert "publish_mode" not in pipeline_settings.model_fields_set

    summary = notarize_folder(str(folder), "legacy", pipeline_settings, True)
    assert summary["chain_id"] == chain_id
    assert (summary["queued"], summary["published"], summary["documents_with_receipt"]) == (2, 2, 3)
    assert (summary["skipped_known"], summary["published_for_other_runs"]) == (1, 1)
    record = store.collections.find("legacy")
    assert record is not None and record.mode == "clear"
    for proof in store.proofs.records(collection="legacy"):
        row = proof.notarization
        expected = document_entry(
            chain_id, sha256=row.sha256, size_bytes=row.size_bytes, path=row.path
        )
        assert (row.kind, row.entry_hash) == ("document", expected.entry_hash)
    chosen = pipeline_settings.model_copy(update={"publish_mode": "aggregate"})
    with pytest.raises(CollectionModeError):
        notarize_folder(str(folder), "legacy", chosen, True)
    store.close()
