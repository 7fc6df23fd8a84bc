"""Proof bundles of notarized documents (pure assembly; no I/O, no Prefect).

A bundle holds everything needed to check a document offline (``ledger.core.proof``,
``docs/proof-bundle.md``): its SHA-256, the entry bytes (rebuilt here from the document's
hash, size and path exactly as published), the stored receipt, the directory block bytes
and the anchor proof.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectors.audit_store import NotarizationRow
from ledger.core.entry import Entry
from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import ProofBundle, build_bundle
from ledger.core.proof.verify import verify_bundle
from tasks.documents import document_entry


def entry_bytes(row: NotarizationRow) -> bytes:
    """The marshalled entry that notarized ``row`` (recomputed, hash-checked by the bundle)."""
    entry = document_entry(
        row.chain_id, sha256=row.sha256, size_bytes=row.size_bytes, path=row.path
    )
    return Entry(bytes.fromhex(entry.chain_id), entry.external_ids, entry.content).marshal()


def bundle_for(
    row: NotarizationRow,
    *,
    receipt: Mapping[str, Any],
    dblock_raw: bytes,
    anchor_proof: Mapping[str, Any],
    policy: PowParams | None = None,
) -> ProofBundle:
    """Build and verify the bundle of ``row``.

    Raises:
        ProofError: the parts do not prove the document (names the failing step).
    """
    bundle = build_bundle(
        document_sha256=bytes.fromhex(row.sha256),
        entry=entry_bytes(row),
        receipt=receipt,
        directory_block=dblock_raw,
        anchor_proof=anchor_proof,
    )
    verify_bundle(bundle, document_sha256=bytes.fromhex(row.sha256), policy=policy)
    return bundle
