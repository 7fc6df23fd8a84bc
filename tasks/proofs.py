"""Proof bundles of notarized documents (pure assembly; no I/O, no Prefect).

A bundle holds everything needed to check a document offline (``ledger.core.proof``,
``docs/proof-bundle.md``): its SHA-256, the entry bytes (rebuilt here from the document's
hash, size and path exactly as published), the stored receipt, the directory block bytes
and the anchor proof.

Where exported proofs live, relative to the export folder (``notary proof export``), is
decided here too, so that the exporter and the audit report's links agree:
``<collection slug>/<relative path>.proof.json``, the verification page ``verify.html``
at the top, and a document's own page (its bundle built in) beside its bundle as
``<relative path>.verify.html``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from connectors.audit_store import NotarizationRow
from ledger.core.entry import Entry
from ledger.core.pow.params import PowParams
from ledger.core.proof.bundle import ProofBundle, build_bundle
from ledger.core.proof.verify import verify_bundle
from tasks.documents import document_entry

__all__ = [
    "PAGE_NAME",
    "bundle_for",
    "bundle_relpath",
    "collection_slug",
    "entry_bytes",
    "page_relpath",
]

#: The verification page's file name, at the top of an export folder.
PAGE_NAME = "verify.html"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_BUNDLE_SUFFIX = ".proof.json"
_PAGE_SUFFIX = ".verify.html"


def collection_slug(name: str) -> str:
    """A file-name-safe form of a collection name (at most 100 characters, never empty)."""
    return _UNSAFE.sub("_", name).strip("_")[:100] or "collection"


def bundle_relpath(collection: str, path: str, sha256: str) -> PurePosixPath:
    """Where a document's bundle goes inside an export folder.

    ``<collection slug>/<path parts, made safe>.proof.json``; never outside the folder (no
    ``..``, ``.`` or absolute parts); a document without a usable path is named by its
    ``sha256`` (hex).
    """
    parts = [p for p in path.split("/") if p not in ("", ".", "..")]
    safe = [_UNSAFE.sub("_", p) for p in parts] or [sha256]
    relative = PurePosixPath(collection_slug(collection), *safe)
    return relative.with_name(relative.name + _BUNDLE_SUFFIX)


def page_relpath(bundle: PurePosixPath) -> PurePosixPath:
    """The document's own verification page beside its bundle (``bundle_relpath``)."""
    return bundle.with_name(bundle.name.removesuffix(_BUNDLE_SUFFIX) + _PAGE_SUFFIX)


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
