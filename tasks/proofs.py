"""Proof bundles of notarized documents (pure assembly; no I/O, no Prefect).

A bundle holds everything needed to check a document offline (``ledger.core.proof``,
``docs/proof-bundle.md``): its SHA-256, the entry bytes (rebuilt here exactly as published,
``tasks.documents.notarization_entry``), the stored receipt, the directory block bytes
and the anchor proof. A document of a private collection gets a version-2 bundle: its
commitment nonce (derived from the collection key) and, when it was aggregated, its leaf
index, the tree size and its audit path; a clear one a version-1 bundle.

Where exported proofs live, relative to the export folder (``notary proof export``), is
decided here too, so that the exporter and the audit report's links agree:
``<collection>/<relative path>.<version>.proof.json``, every part of it encoded by
``tasks.export_names`` (two documents, or two versions of one, never share a name, also
on a file system that folds case), the verification page ``verify.html`` at the top, and
a document's own page (its bundle built in) beside its bundle as
``<relative path>.<version>.verify.html``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from connectors.audit import NotarizationRow
from ledger.core.commitment import document_nonce
from ledger.core.entry import Entry
from ledger.core.proof.bundle import Aggregation, ProofBundle, build_bundle
from ledger.core.proof.policy import TrustPolicy
from ledger.core.proof.verify import verify_bundle
from ledger.core.timestamps.bundle_part import TimestampsPart
from tasks.documents import notarization_entry
from tasks.export_names import collection_slug, encode_component, version_stamp

__all__ = [
    "PAGE_NAME",
    "bundle_for",
    "bundle_relpath",
    "entry_bytes",
    "page_relpath",
]

#: The verification page's file name, at the top of an export folder.
PAGE_NAME = "verify.html"
_BUNDLE_SUFFIX = ".proof.json"
_PAGE_SUFFIX = ".verify.html"


def bundle_relpath(
    collection: str, path: str, sha256: str, notarized_at: datetime
) -> PurePosixPath:
    """Where the bundle of one version of a document goes inside an export folder.

    ``<collection>/<path parts>.<version>.proof.json``, each part as
    ``tasks.export_names`` encodes it and the version its ``version_stamp``: different
    ``(collection, path, sha256)`` never give one name (nor names that differ only in
    case), and the name is never outside the folder (no ``..``, ``.`` or absolute parts).
    A document without a usable path is named by its ``sha256`` (hex).

    Args:
        collection: the collection's name. path: the document's relative path, as
            notarized. sha256: its hex SHA-256. notarized_at: its notarization's
            ``created_at`` (UTC).
    """
    parts = [p for p in path.split("/") if p not in ("", ".", "..")] or [sha256]
    safe = [encode_component(p) for p in parts]
    safe[-1] += f".{version_stamp(notarized_at, sha256)}{_BUNDLE_SUFFIX}"
    return PurePosixPath(collection_slug(collection), *safe)


def page_relpath(bundle: PurePosixPath) -> PurePosixPath:
    """The document's own verification page beside its bundle (``bundle_relpath``)."""
    return bundle.with_name(bundle.name.removesuffix(_BUNDLE_SUFFIX) + _PAGE_SUFFIX)


def entry_bytes(row: NotarizationRow, *, collection_key: bytes | None = None) -> bytes:
    """The marshalled entry that notarized ``row`` (recomputed, hash-checked by the bundle);
    ``collection_key`` is needed for a commitment row.

    Raises:
        ValueError: a commitment row without its collection key.
    """
    entry = notarization_entry(row, collection_key=collection_key)
    return Entry(bytes.fromhex(entry.chain_id), entry.external_ids, entry.content).marshal()


def bundle_for(
    row: NotarizationRow,
    *,
    receipt: Mapping[str, Any],
    dblock_raw: bytes,
    anchor_proof: Mapping[str, Any],
    collection_key: bytes | None = None,
    policy: TrustPolicy,
    timestamps: TimestampsPart | None = None,
) -> ProofBundle:
    """Build and verify the bundle of the document of ``row``.

    Args:
        row: a document's notarization: a clear row (version-1 bundle), a commitment row
            or a batch member (``is_member``; version 2). A batch row itself is no
            document: pass one of its members (``AuditStore.batches.members``).
        receipt, dblock_raw, anchor_proof: the notarization's stored receipt, its directory
            block bytes and the anchor proof of that block.
        collection_key: the collection's secret key (private rows: derives the nonce).
        policy: the trust policy the bundle is verified under (``ledger.core.proof.policy``).
        timestamps: the block's independent timestamps (a version-3 bundle).

    Raises:
        ProofError: the parts do not prove the document (names the failing step).
        ValueError: a private row without its collection key, or a batch row.
    """
    if row.kind == "batch" and not row.is_member:
        raise ValueError(f"notarization {row.id} is a batch, not a document")
    digest = bytes.fromhex(row.sha256)
    nonce, aggregation = None, None
    if row.kind != "document":
        if collection_key is None:
            raise ValueError(f"no key for collection {row.collection!r}")
        nonce = document_nonce(collection_key, digest)
    if row.is_member:
        assert row.leaf_index is not None and row.batch_size is not None
        path = tuple(bytes.fromhex(h) for h in row.audit_path)
        aggregation = Aggregation(row.leaf_index, row.batch_size, path)
    bundle = build_bundle(
        document_sha256=digest,
        entry=entry_bytes(row, collection_key=collection_key),
        receipt=receipt,
        directory_block=dblock_raw,
        anchor_proof=anchor_proof,
        commitment_nonce=nonce,
        aggregation=aggregation,
        timestamps=timestamps,
    )
    verify_bundle(bundle, document_sha256=bytes.fromhex(row.sha256), policy=policy)
    return bundle
